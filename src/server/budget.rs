//! The budget for request bodies buffered across all connections, as a
//! fair queue.
//!
//! A body is read only as far as its reservation reaches: with a
//! Content-Length the whole length is reserved before the first byte is
//! read, without one the reservation grows ahead of the buffer. A request
//! that does not fit waits in line, in arrival order, and is granted when
//! the bytes ahead of it are released; one that waits too long is refused
//! with 503 by the shell. So the sum of reservations never passes the
//! budget, and every honest body is served in turn instead of racing the
//! others for each release (the race starved big bodies, and a herd woken
//! on every release burnt the CPU the readers needed).
//!
//! Two lines: bodies up to [`SMALL_BODY`] (a Job's review is a few KiB) and
//! larger ones, which may hold only [`Book::large_cap`] of the budget
//! together, so large bodies held open by a client cannot keep ordinary
//! reviews waiting. Small bodies may borrow the large share while no large
//! body waits; once one waits they keep to their quarter, so a stream of
//! small bodies cannot overtake a large one forever.
//!
//! An HTTP/2 stream also pins its receive window ([`Book::pin`]) from its
//! arrival until its answer: what the client may have sent on it that the
//! server has not read. The pins bound what streams waiting in line hold
//! across all connections. Because every open stream's window is pinned,
//! the connection's window can be all of them together: a stream waiting
//! in line then never holds up the reading ones on its connection (with a
//! window of one stream's, 15 reviews read at a time took 8–9 s;
//! BENCHMARKS.md, Big reviews).

use std::{
    collections::{HashMap, VecDeque},
    sync::{Arc, Mutex},
    time::Duration,
};

use tokio::sync::Notify;

use crate::metrics::BudgetMetrics;

/// Bodies up to this size are small.
pub const SMALL_BODY: u64 = 64 * 1024;

/// A place in line.
pub type Ticket = u64;

/// What a request for bytes got.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ask {
    /// Granted at once.
    Granted,
    /// Waiting in line; granted later, or cancelled.
    Queued(Ticket),
    /// Larger than its line may ever hold.
    Never,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Waiter {
    ticket: Ticket,
    from: u64,
    to: u64,
}

/// The accounting, without I/O or clock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Book {
    pub cap: u64,
    /// What reservations larger than [`SMALL_BODY`] may hold together.
    pub large_cap: u64,
    /// What HTTP/2 stream pins may hold together.
    pub pin_cap: u64,
    used: u64,
    used_large: u64,
    pinned: u64,
    small: VecDeque<Waiter>,
    large: VecDeque<Waiter>,
    next: Ticket,
}

fn large(bytes: u64) -> u64 {
    if bytes > SMALL_BODY {
        bytes
    } else {
        0
    }
}

impl Book {
    /// A budget of `cap` bytes of which three quarters may go to large
    /// bodies, and a quarter of it again for HTTP/2 stream pins.
    pub fn new(cap: u64) -> Book {
        Book {
            cap,
            large_cap: cap / 4 * 3,
            pin_cap: cap / 4,
            used: 0,
            used_large: 0,
            pinned: 0,
            small: VecDeque::new(),
            large: VecDeque::new(),
            next: 0,
        }
    }

    pub fn used(&self) -> u64 {
        self.used
    }

    pub fn used_large(&self) -> u64 {
        self.used_large
    }

    pub fn pinned(&self) -> u64 {
        self.pinned
    }

    pub fn waiting(&self) -> usize {
        self.small.len() + self.large.len()
    }

    /// Whether growing a reservation from `from` to `to` fits now, by the
    /// rule of its line (ignoring who waits ahead of it).
    fn fits(&self, from: u64, to: u64) -> bool {
        let used = self.used - from + to;
        let used_large = self.used_large - large(from) + large(to);
        if large(to) > 0 {
            used <= self.cap && used_large <= self.large_cap
        } else if self.large.is_empty() {
            used <= self.cap
        } else {
            // A large body waits: small ones keep to their quarter.
            used <= self.cap && used - used_large <= self.cap - self.large_cap
        }
    }

    fn apply(&mut self, from: u64, to: u64) {
        self.used = self.used - from + to;
        self.used_large = self.used_large - large(from) + large(to);
    }

    /// Asks to grow a reservation from `from` to `to` bytes: granted when it
    /// fits and nobody waits ahead of it in its line, else queued.
    pub fn ask(&mut self, from: u64, to: u64) -> Ask {
        if to <= from {
            return Ask::Granted;
        }
        let line_cap = if large(to) > 0 {
            self.large_cap
        } else {
            self.cap
        };
        if to > line_cap {
            return Ask::Never;
        }
        let line = if large(to) > 0 {
            &self.large
        } else {
            &self.small
        };
        if line.is_empty() && self.fits(from, to) {
            self.apply(from, to);
            return Ask::Granted;
        }
        let ticket = self.next;
        self.next += 1;
        let w = Waiter { ticket, from, to };
        if large(to) > 0 {
            self.large.push_back(w);
        } else {
            self.small.push_back(w);
        }
        Ask::Queued(ticket)
    }

    /// Grants the heads of both lines while they fit; the tickets granted.
    fn pump(&mut self) -> Vec<Ticket> {
        let mut granted = Vec::new();
        loop {
            // Large first: a small body admitted now could be what keeps
            // the large head out.
            if let Some(w) = self.large.front() {
                if self.fits(w.from, w.to) {
                    let w = self.large.pop_front().expect("front exists");
                    self.apply(w.from, w.to);
                    granted.push(w.ticket);
                    continue;
                }
            }
            if let Some(w) = self.small.front() {
                if self.fits(w.from, w.to) {
                    let w = self.small.pop_front().expect("front exists");
                    self.apply(w.from, w.to);
                    granted.push(w.ticket);
                    continue;
                }
            }
            return granted;
        }
    }

    /// Returns `bytes` of a reservation; the tickets this grants.
    pub fn release(&mut self, bytes: u64) -> Vec<Ticket> {
        self.used -= bytes.min(self.used);
        self.used_large -= large(bytes).min(self.used_large);
        self.pump()
    }

    /// Leaves the line (the waiter gave up). `false` if `ticket` is not in
    /// line (granted already: the bytes are the caller's). Also returns the
    /// tickets granted because it left.
    pub fn cancel(&mut self, ticket: Ticket) -> (bool, Vec<Ticket>) {
        let mut found = false;
        for line in [&mut self.small, &mut self.large] {
            if let Some(i) = line.iter().position(|w| w.ticket == ticket) {
                line.remove(i);
                found = true;
            }
        }
        (found, if found { self.pump() } else { Vec::new() })
    }

    /// Pins `bytes` for an HTTP/2 stream, if the pins allow.
    pub fn pin(&mut self, bytes: u64) -> bool {
        if self.pinned + bytes > self.pin_cap {
            return false;
        }
        self.pinned += bytes;
        true
    }

    pub fn unpin(&mut self, bytes: u64) {
        self.pinned -= bytes.min(self.pinned);
    }
}

#[derive(Debug)]
struct Inner {
    book: Book,
    /// The waiters' doorbells, rung once when their ticket is granted.
    bells: HashMap<Ticket, Arc<Notify>>,
}

impl Inner {
    fn ring(&mut self, granted: Vec<Ticket>) {
        for t in granted {
            if let Some(bell) = self.bells.remove(&t) {
                // A stored permit: a waiter that has not polled yet still
                // sees it.
                bell.notify_one();
            }
        }
    }
}

/// The shared budget: the [`Book`] behind a lock, and a doorbell per
/// waiter. Nothing here decides; it waits and rings.
#[derive(Debug)]
pub struct Budget {
    inner: Mutex<Inner>,
    metrics: BudgetMetrics,
}

/// Bytes (and a stream pin) held against the budget, returned on drop.
#[derive(Debug)]
pub struct Reservation<'a> {
    budget: &'a Budget,
    bytes: u64,
    pinned: u64,
}

/// Why a reservation did not grow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// No room came free within the wait.
    Waited,
    /// More than the request's line may ever hold.
    TooLarge,
}

impl Budget {
    pub fn new(cap: u64) -> Budget {
        Budget::with_metrics(cap, BudgetMetrics::default())
    }

    pub fn with_metrics(cap: u64, metrics: BudgetMetrics) -> Budget {
        Budget {
            inner: Mutex::new(Inner {
                book: Book::new(cap),
                bells: HashMap::new(),
            }),
            metrics,
        }
    }

    pub fn cap(&self) -> u64 {
        self.lock().book.cap
    }

    pub fn large_cap(&self) -> u64 {
        self.lock().book.large_cap
    }

    pub fn used(&self) -> u64 {
        self.lock().book.used()
    }

    pub fn pinned(&self) -> u64 {
        self.lock().book.pinned()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // The book holds plain numbers and queues each changed in one
        // step: a panic elsewhere cannot leave it half-updated, so a
        // poisoned lock is still sound to use.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn empty(&self) -> Reservation<'_> {
        Reservation {
            budget: self,
            bytes: 0,
            pinned: 0,
        }
    }

    /// Pins `bytes` on `r` (an HTTP/2 stream's window); `false` when the
    /// pins are used up.
    pub fn pin(&self, r: &mut Reservation<'_>, bytes: u64) -> bool {
        if !self.lock().book.pin(bytes) {
            return false;
        }
        r.pinned += bytes;
        true
    }

    fn note_peak(&self, used: u64) {
        let used = i64::try_from(used).unwrap_or(i64::MAX);
        if self.metrics.peak_bytes.get() < used {
            self.metrics.peak_bytes.set(used);
        }
    }

    /// Grows `r` to `to` bytes, waiting in line at most `wait`.
    pub async fn grow(
        &self,
        r: &mut Reservation<'_>,
        to: u64,
        wait: Duration,
    ) -> Result<(), Refused> {
        let deadline = tokio::time::Instant::now() + wait;
        let (ticket, bell) = {
            let mut g = self.lock();
            match g.book.ask(r.bytes, to) {
                Ask::Granted => {
                    let used = g.book.used();
                    drop(g);
                    self.note_peak(used);
                    r.bytes = r.bytes.max(to);
                    return Ok(());
                }
                Ask::Never => return Err(Refused::TooLarge),
                Ask::Queued(t) => {
                    let bell = Arc::new(Notify::new());
                    g.bells.insert(t, bell.clone());
                    (t, bell)
                }
            }
        };
        self.metrics.queued.inc();
        let rang = tokio::time::timeout_at(deadline, bell.notified())
            .await
            .is_ok();
        if !rang {
            let mut g = self.lock();
            let (in_line, granted) = g.book.cancel(ticket);
            g.bells.remove(&ticket);
            g.ring(granted);
            if in_line {
                drop(g);
                self.metrics.gave_up.inc();
                return Err(Refused::Waited);
            }
            // Granted as the wait ran out: the bytes are ours.
        }
        self.note_peak(self.used());
        r.bytes = r.bytes.max(to);
        Ok(())
    }
}

impl Reservation<'_> {
    pub fn bytes(&self) -> u64 {
        self.bytes
    }
}

impl Drop for Reservation<'_> {
    fn drop(&mut self) {
        if self.bytes == 0 && self.pinned == 0 {
            return;
        }
        let mut g = self.budget.lock();
        g.book.unpin(self.pinned);
        if self.bytes > 0 {
            let granted = g.book.release(self.bytes);
            g.ring(granted);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const S: u64 = SMALL_BODY;

    #[test]
    fn large_bodies_leave_a_quarter_for_small_ones() {
        let mut b = Book::new(100 * S);
        assert_eq!(b.large_cap, 75 * S);
        assert_eq!(b.ask(0, 40 * S), Ask::Granted);
        assert_eq!(b.ask(0, 35 * S), Ask::Granted);
        // The large share is used up: the next large body waits...
        let Ask::Queued(t) = b.ask(0, 2 * S) else {
            panic!("a large body over the large share must wait")
        };
        // ...small bodies still fit in their quarter.
        for _ in 0..25 {
            assert_eq!(b.ask(0, S), Ask::Granted);
        }
        let Ask::Queued(small) = b.ask(0, 1) else {
            panic!("the budget is full")
        };
        assert_eq!(b.used(), 100 * S);
        // The large body first, then the small one behind it.
        assert_eq!(b.release(40 * S), vec![t, small]);
        assert_eq!(b.used_large(), 37 * S);
    }

    #[test]
    fn a_body_over_its_line_is_refused_outright() {
        let mut b = Book::new(8 * S);
        assert_eq!(b.ask(0, 7 * S), Ask::Never);
        assert_eq!(b.ask(0, 6 * S), Ask::Granted);
    }

    #[test]
    fn a_reservation_that_grows_past_small_counts_as_large() {
        let mut b = Book::new(8 * S);
        assert_eq!(b.ask(0, S), Ask::Granted);
        assert_eq!(b.ask(S, 6 * S), Ask::Granted);
        assert!(matches!(b.ask(6 * S, 7 * S), Ask::Never));
        assert_eq!(b.ask(0, S), Ask::Granted);
        assert!(b.release(6 * S).is_empty());
        assert!(b.release(S).is_empty());
        assert_eq!(b, Book::new(8 * S));
    }

    #[test]
    fn a_large_body_is_not_overtaken_by_a_stream_of_small_ones() {
        let mut b = Book::new(8 * S);
        // Small bodies borrow the large share while no large one waits.
        for _ in 0..8 {
            assert_eq!(b.ask(0, S), Ask::Granted);
        }
        let Ask::Queued(big) = b.ask(0, 6 * S) else {
            panic!("the budget is full: the large body waits")
        };
        // Small bodies keep coming, one for each that leaves. Without the
        // rule they would take every freed byte and the large body would
        // wait forever; with it, they stay within their quarter (2 S).
        let mut granted = Vec::new();
        for _ in 0..8 {
            granted.extend(b.release(S));
            if granted.contains(&big) {
                break;
            }
            match b.ask(0, S) {
                Ask::Granted => {}
                Ask::Queued(_) => {}
                Ask::Never => unreachable!(),
            }
        }
        assert!(granted.contains(&big), "the large body was starved");
    }

    #[test]
    fn a_waiter_leaving_lets_the_ones_behind_it_in() {
        let mut b = Book::new(8 * S);
        assert_eq!(b.ask(0, 4 * S), Ask::Granted);
        let Ask::Queued(first) = b.ask(0, 6 * S) else {
            panic!()
        };
        // Fits alone, but waits behind the first: no overtaking.
        let Ask::Queued(second) = b.ask(0, 2 * S) else {
            panic!("a later large body must not overtake an earlier one")
        };
        assert_eq!(b.cancel(first), (true, vec![second]));
        assert_eq!(b.cancel(second), (false, vec![]));
        assert_eq!(b.waiting(), 0);
    }

    #[test]
    fn pins_are_bounded_apart_from_the_bodies() {
        let mut b = Book::new(8 * S);
        assert_eq!(b.pin_cap, 2 * S);
        assert!(b.pin(S));
        assert!(b.pin(S));
        assert!(!b.pin(1));
        b.unpin(S);
        assert!(b.pin(S));
        assert_eq!(b.used(), 0);
    }

    #[derive(Debug, Clone)]
    enum Op {
        /// A new reservation of this many bytes.
        Ask(u64),
        /// Release the i-th holder (modulo).
        Release(usize),
        /// The i-th waiter (modulo) gives up.
        Cancel(usize),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            4 => prop_oneof![1..=SMALL_BODY, SMALL_BODY + 1..=40 * SMALL_BODY].prop_map(Op::Ask),
            3 => any::<usize>().prop_map(Op::Release),
            1 => any::<usize>().prop_map(Op::Cancel),
        ]
    }

    struct Model {
        book: Book,
        holders: Vec<u64>,
        waiting: Vec<(Ticket, u64)>,
        granted_small: Vec<Ticket>,
        granted_large: Vec<Ticket>,
    }

    impl Model {
        fn grant(&mut self, tickets: Vec<Ticket>) {
            for t in tickets {
                let i = self
                    .waiting
                    .iter()
                    .position(|w| w.0 == t)
                    .expect("only waiters are granted");
                let (t, bytes) = self.waiting.remove(i);
                if bytes > SMALL_BODY {
                    self.granted_large.push(t);
                } else {
                    self.granted_small.push(t);
                }
                self.holders.push(bytes);
            }
        }

        fn check(&self) {
            let b = &self.book;
            assert!(b.used() <= b.cap, "over budget: {b:?}");
            assert!(b.used_large() <= b.large_cap, "over the large share: {b:?}");
            assert_eq!(b.used(), self.holders.iter().sum::<u64>());
            assert_eq!(b.waiting(), self.waiting.len());
            // Within each line, tickets are granted in the order taken.
            for g in [&self.granted_small, &self.granted_large] {
                assert!(g.windows(2).all(|w| w[0] < w[1]), "out of order: {g:?}");
            }
            // Nobody waits while the head of its line would fit: the
            // budget never sits idle in front of a waiter.
            let mut probe = b.clone();
            assert!(
                probe.pump().is_empty(),
                "a grantable waiter was left waiting"
            );
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]
        /// Never over budget; grants in arrival order within each line;
        /// and once arrivals stop, releasing the holders serves every
        /// waiter (none starves).
        #[test]
        fn the_fair_queue_holds_its_invariants(ops in proptest::collection::vec(op(), 1..200)) {
            let mut m = Model {
                book: Book::new(64 * SMALL_BODY),
                holders: Vec::new(),
                waiting: Vec::new(),
                granted_small: Vec::new(),
                granted_large: Vec::new(),
            };
            for op in ops {
                match op {
                    Op::Ask(bytes) => match m.book.ask(0, bytes) {
                        Ask::Granted => m.holders.push(bytes),
                        Ask::Queued(t) => m.waiting.push((t, bytes)),
                        Ask::Never => prop_assert!(bytes > m.book.large_cap),
                    },
                    Op::Release(i) if !m.holders.is_empty() => {
                        let bytes = m.holders.remove(i % m.holders.len());
                        let g = m.book.release(bytes);
                        m.grant(g);
                    }
                    Op::Cancel(i) if !m.waiting.is_empty() => {
                        let (t, _) = m.waiting.remove(i % m.waiting.len());
                        let (found, g) = m.book.cancel(t);
                        prop_assert!(found);
                        m.grant(g);
                    }
                    _ => {}
                }
                m.check();
            }
            // No more arrivals: holders finish one by one.
            let mut rounds = 0;
            while let Some(bytes) = m.holders.pop() {
                let g = m.book.release(bytes);
                m.grant(g);
                m.check();
                rounds += 1;
                prop_assert!(rounds < 10_000);
            }
            prop_assert!(m.waiting.is_empty(), "starved: {:?}", m.waiting);
            prop_assert_eq!(m.book.used(), 0);
        }
    }

    #[tokio::test]
    async fn waiters_are_served_in_arrival_order_without_polling() {
        let budget = Arc::new(Budget::new(8 * S));
        let mut first = budget.empty();
        budget
            .grow(&mut first, 6 * S, Duration::ZERO)
            .await
            .unwrap();
        let order = Arc::new(Mutex::new(Vec::new()));
        let mut tasks = Vec::new();
        for i in 0..4u64 {
            let (budget, order) = (budget.clone(), order.clone());
            tasks.push(tokio::spawn(async move {
                let mut r = budget.empty();
                budget
                    .grow(&mut r, 5 * S, Duration::from_secs(5))
                    .await
                    .unwrap();
                order.lock().unwrap().push(i);
                tokio::time::sleep(Duration::from_millis(5)).await;
            }));
            // Arrive in this order.
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        assert_eq!(budget.lock().book.waiting(), 4);
        drop(first);
        for t in tasks {
            t.await.unwrap();
        }
        assert_eq!(*order.lock().unwrap(), vec![0, 1, 2, 3]);
        assert_eq!(budget.used(), 0);
        assert!(budget.lock().bells.is_empty());
        assert_eq!(budget.metrics.queued.get(), 4);
    }

    #[tokio::test]
    async fn a_waiter_that_gives_up_is_refused_and_leaves_the_line() {
        let budget = Budget::new(4 * S);
        let mut a = budget.empty();
        budget.grow(&mut a, 2 * S, Duration::ZERO).await.unwrap();
        let mut b = budget.empty();
        assert_eq!(
            budget.grow(&mut b, 2 * S, Duration::from_millis(20)).await,
            Err(Refused::Waited)
        );
        assert_eq!(budget.lock().book.waiting(), 0);
        assert_eq!(budget.metrics.gave_up.get(), 1);
        let waiter = budget.grow(&mut b, 2 * S, Duration::from_secs(5));
        let release = async {
            tokio::time::sleep(Duration::from_millis(20)).await;
            drop(a);
        };
        let (got, ()) = tokio::join!(waiter, release);
        assert_eq!(got, Ok(()));
        assert_eq!(b.bytes(), 2 * S);
        drop(b);
        assert_eq!(budget.used(), 0);
    }
}
