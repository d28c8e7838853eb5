//! The budget for request bodies buffered across all connections.
//!
//! A body is read only as far as its reservation reaches: with a
//! Content-Length the whole length is reserved before the first byte is
//! read, without one the reservation grows ahead of the buffer. A body that
//! cannot reserve waits (bounded) and is then refused with 503, so the sum
//! of buffered bodies never passes the budget. Bodies larger than
//! [`SMALL_BODY`] may only use [`Book::large_cap`] of it: the rest is kept
//! for ordinary reviews (a Job's review is a few KiB), so large bodies held
//! open by a client cannot starve them.

use std::{sync::Mutex, time::Duration};

use tokio::sync::Notify;

/// Bodies up to this size may use the whole budget.
pub const SMALL_BODY: u64 = 64 * 1024;

/// The accounting, without I/O.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Book {
    pub cap: u64,
    /// What reservations larger than [`SMALL_BODY`] may hold together.
    pub large_cap: u64,
    used: u64,
    used_large: u64,
}

impl Book {
    /// A budget of `cap` bytes of which three quarters may go to large bodies.
    pub fn new(cap: u64) -> Book {
        Book {
            cap,
            large_cap: cap / 4 * 3,
            used: 0,
            used_large: 0,
        }
    }

    pub fn used(&self) -> u64 {
        self.used
    }

    /// Grows a reservation from `from` to `to` bytes if the budget allows.
    pub fn try_grow(&mut self, from: u64, to: u64) -> bool {
        if to <= from {
            return true;
        }
        let used = self.used - from + to;
        let large_from = if from > SMALL_BODY { from } else { 0 };
        let large_to = if to > SMALL_BODY { to } else { 0 };
        let used_large = self.used_large - large_from + large_to;
        if used > self.cap || (large_to > 0 && used_large > self.large_cap) {
            return false;
        }
        self.used = used;
        self.used_large = used_large;
        true
    }

    pub fn release(&mut self, bytes: u64) {
        self.used -= bytes.min(self.used);
        if bytes > SMALL_BODY {
            self.used_large -= bytes.min(self.used_large);
        }
    }
}

/// The shared budget.
#[derive(Debug)]
pub struct Budget {
    book: Mutex<Book>,
    freed: Notify,
}

/// Bytes held against the budget, returned on drop.
#[derive(Debug)]
pub struct Reservation<'a> {
    budget: &'a Budget,
    bytes: u64,
}

impl Budget {
    pub fn new(cap: u64) -> Budget {
        Budget {
            book: Mutex::new(Book::new(cap)),
            freed: Notify::new(),
        }
    }

    pub fn cap(&self) -> u64 {
        self.lock().cap
    }

    pub fn used(&self) -> u64 {
        self.lock().used()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Book> {
        // The book holds plain numbers: a panic elsewhere cannot leave it
        // half-updated, so a poisoned lock is still sound to use.
        self.book.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn empty(&self) -> Reservation<'_> {
        Reservation {
            budget: self,
            bytes: 0,
        }
    }

    /// Grows `r` to `to` bytes, waiting at most `wait` for room.
    pub async fn grow(&self, r: &mut Reservation<'_>, to: u64, wait: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            let notified = self.freed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.lock().try_grow(r.bytes, to) {
                r.bytes = r.bytes.max(to);
                return true;
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                return false;
            }
        }
    }
}

impl Reservation<'_> {
    pub fn bytes(&self) -> u64 {
        self.bytes
    }
}

impl Drop for Reservation<'_> {
    fn drop(&mut self) {
        if self.bytes > 0 {
            self.budget.lock().release(self.bytes);
            self.budget.freed.notify_waiters();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn large_bodies_leave_a_quarter_for_small_ones() {
        let mut b = Book::new(100 * SMALL_BODY);
        assert_eq!(b.large_cap, 75 * SMALL_BODY);
        assert!(b.try_grow(0, 40 * SMALL_BODY));
        assert!(b.try_grow(0, 35 * SMALL_BODY));
        // The large share is used up...
        assert!(!b.try_grow(0, 2 * SMALL_BODY));
        // ...small bodies still fit, up to the whole budget.
        for _ in 0..25 {
            assert!(b.try_grow(0, SMALL_BODY));
        }
        assert!(!b.try_grow(0, 1));
        assert_eq!(b.used(), 100 * SMALL_BODY);
        b.release(40 * SMALL_BODY);
        assert!(b.try_grow(0, 2 * SMALL_BODY));
    }

    #[test]
    fn a_reservation_that_grows_past_small_counts_as_large() {
        let mut b = Book::new(8 * SMALL_BODY);
        assert!(b.try_grow(0, SMALL_BODY));
        assert!(b.try_grow(SMALL_BODY, 6 * SMALL_BODY));
        assert!(!b.try_grow(6 * SMALL_BODY, 7 * SMALL_BODY));
        assert!(b.try_grow(0, SMALL_BODY));
        b.release(6 * SMALL_BODY);
        b.release(SMALL_BODY);
        assert_eq!(b.used(), 0);
        assert_eq!(b, Book::new(8 * SMALL_BODY));
    }

    #[tokio::test]
    async fn a_waiting_body_gets_room_when_another_is_released() {
        let budget = Budget::new(4 * SMALL_BODY);
        let mut a = budget.empty();
        assert!(budget.grow(&mut a, 2 * SMALL_BODY, Duration::ZERO).await);
        let mut b = budget.empty();
        assert!(
            !budget
                .grow(&mut b, 2 * SMALL_BODY, Duration::from_millis(20))
                .await
        );
        let waiter = budget.grow(&mut b, 2 * SMALL_BODY, Duration::from_secs(5));
        let release = async {
            tokio::time::sleep(Duration::from_millis(20)).await;
            drop(a);
        };
        let (got, ()) = tokio::join!(waiter, release);
        assert!(got);
        assert_eq!(b.bytes(), 2 * SMALL_BODY);
        drop(b);
        assert_eq!(budget.used(), 0);
    }
}
