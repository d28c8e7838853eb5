//! What a connection is allowed to cost in time, decided from plain data.
//!
//! The shell keeps a [`Snapshot`] of every live connection (counters and
//! instants, in milliseconds since the server started) and asks two
//! questions of it: [`verdict`] — must this connection go now, and if not,
//! when should it be looked at again — and [`victim`] — at the connection
//! cap, which connection gives its slot to a newcomer. No clock is read
//! here: `now` is a parameter.

/// Milliseconds since the server started.
pub type Millis = u64;

/// The deadlines a connection lives under (see README, Limits and bad input).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// From accept until the first request is complete (TLS handshake,
    /// protocol sniff, HTTP/2 preface and SETTINGS, headers, body).
    pub first_request: Millis,
    /// No request open for this long: close (HTTP/1.1) or GOAWAY (HTTP/2).
    pub idle: Millis,
    /// A write blocked, or a response not taken by the client, this long.
    pub write: Millis,
    /// Once draining: how long a connection with no request open may stay
    /// before it is closed (HTTP/2 clients that ignore GOAWAY).
    pub drain_grace: Millis,
}

/// One connection as the shell last saw it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Snapshot {
    pub accepted: Millis,
    /// A request has been received whole (or answered) on it.
    pub productive: bool,
    /// HTTP/2: every stream has its own body deadline (answered 408 on the
    /// stream), so the first-request deadline stops at a stream's headers.
    pub http2: bool,
    /// Requests received (headers in) whose response is not fully sent.
    pub open: u32,
    /// Requests whose body is in and whose answer is being computed.
    pub computing: u32,
    /// Responses produced but not yet taken by the connection.
    pub sending: u32,
    /// When `open` last became 0 (or `accepted`).
    pub idle_since: Millis,
    /// When the last request arrived.
    pub last_request: Millis,
    /// When a response last started or finished sending.
    pub send_progress: Millis,
    /// Since when a write to the socket has been blocked, if it is.
    pub write_blocked_since: Option<Millis>,
    /// Since when the server has been draining, if it is.
    pub draining_since: Option<Millis>,
}

/// Why a connection is closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    FirstRequest,
    Idle,
    WriteBlocked,
    ResponseNotRead,
    Drain,
}

impl Reason {
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::FirstRequest => "first_request_timeout",
            Reason::Idle => "idle_timeout",
            Reason::WriteBlocked => "write_timeout",
            Reason::ResponseNotRead => "response_not_read",
            Reason::Drain => "drain",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Nothing due; look again at this instant.
    Keep(Millis),
    /// Ask the peer to go (HTTP/1.1: close when idle; HTTP/2: GOAWAY), and
    /// look again at this instant.
    GoAway(Reason, Millis),
    /// Drop the connection now.
    Close(Reason),
}

/// The verdict on one connection at `now`.
pub fn verdict(s: &Snapshot, now: Millis, t: &Timeouts) -> Verdict {
    let mut next = Millis::MAX;
    let mut due = |at: Millis, reason: Reason| -> Option<Reason> {
        if now >= at {
            Some(reason)
        } else {
            next = next.min(at);
            None
        }
    };
    if let Some(r) = s
        .write_blocked_since
        .and_then(|w| due(w.saturating_add(t.write), Reason::WriteBlocked))
    {
        return Verdict::Close(r);
    }
    // On HTTP/2 an open stream is under its own deadline (408 on that
    // stream, whose answer makes the connection productive); closing the
    // connection at the same instant would take that answer, and on a
    // shared connection other streams, with it.
    if !(s.productive || (s.http2 && s.open > 0)) {
        if let Some(r) = due(
            s.accepted.saturating_add(t.first_request),
            Reason::FirstRequest,
        ) {
            return Verdict::Close(r);
        }
    }
    if s.sending > 0 {
        if let Some(r) = due(
            s.send_progress.saturating_add(t.write),
            Reason::ResponseNotRead,
        ) {
            return Verdict::Close(r);
        }
    }
    if let Some(d) = s.draining_since {
        if s.open == 0 {
            if let Some(r) = due(d.saturating_add(t.drain_grace), Reason::Drain) {
                return Verdict::Close(r);
            }
        }
    }
    if s.productive && s.open == 0 && s.draining_since.is_none() {
        let at = s.idle_since.saturating_add(t.idle);
        if now >= at {
            return Verdict::GoAway(Reason::Idle, now.saturating_add(t.drain_grace));
        }
        next = next.min(at);
    }
    Verdict::Keep(next)
}

/// At the connection cap: the connection that gives up its slot, if any.
///
/// Never one whose answer is being computed. First the oldest connection
/// that has not completed a request (a silent, slow or half-open client has
/// had the longest to make progress); then the productive connection that
/// has waited longest for its next request. `None`: every slot is busy with
/// real work, and the newcomer waits for one.
pub fn victim<K: Copy>(conns: impl IntoIterator<Item = (K, Snapshot)>) -> Option<K> {
    conns
        .into_iter()
        .filter(|(_, s)| s.computing == 0)
        .min_by_key(|(_, s)| {
            if s.productive {
                (1, s.idle_since.max(s.last_request))
            } else {
                (0, s.accepted)
            }
        })
        .map(|(k, _)| k)
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: Timeouts = Timeouts {
        first_request: 10_000,
        idle: 120_000,
        write: 10_000,
        drain_grace: 1_000,
    };

    fn fresh(at: Millis) -> Snapshot {
        Snapshot {
            accepted: at,
            idle_since: at,
            ..Snapshot::default()
        }
    }

    #[test]
    fn a_connection_without_a_request_goes_at_the_first_request_deadline() {
        let s = fresh(1_000);
        assert_eq!(verdict(&s, 1_000, &T), Verdict::Keep(11_000));
        assert_eq!(
            verdict(&s, 11_000, &T),
            Verdict::Close(Reason::FirstRequest)
        );
        // A request whose body is still arriving does not stop the clock.
        let reading = Snapshot { open: 1, ..s };
        assert_eq!(
            verdict(&reading, 11_000, &T),
            Verdict::Close(Reason::FirstRequest)
        );
    }

    #[test]
    fn an_http2_stream_waiting_for_its_body_keeps_the_connection() {
        let s = Snapshot {
            http2: true,
            ..fresh(1_000)
        };
        // No stream yet: the first-request deadline holds as on HTTP/1.1.
        assert_eq!(
            verdict(&s, 11_000, &T),
            Verdict::Close(Reason::FirstRequest)
        );
        // A stream open: its own body deadline answers it (408), not the
        // connection's.
        let reading = Snapshot { open: 1, ..s };
        assert_eq!(verdict(&reading, 11_000, &T), Verdict::Keep(Millis::MAX));
        // The stream reset by the client without an answer: the connection
        // is still unproductive and past its deadline.
        let reset = Snapshot { open: 0, ..reading };
        assert_eq!(
            verdict(&reset, 12_000, &T),
            Verdict::Close(Reason::FirstRequest)
        );
    }

    #[test]
    fn a_productive_connection_goes_away_when_idle() {
        let s = Snapshot {
            productive: true,
            idle_since: 5_000,
            ..fresh(1_000)
        };
        assert_eq!(verdict(&s, 11_000, &T), Verdict::Keep(125_000));
        assert_eq!(
            verdict(&s, 125_000, &T),
            Verdict::GoAway(Reason::Idle, 126_000)
        );
        // Not while a request is open.
        let busy = Snapshot { open: 1, ..s };
        assert_eq!(verdict(&busy, 200_000, &T), Verdict::Keep(Millis::MAX));
    }

    #[test]
    fn blocked_writes_and_unread_responses_close() {
        let s = Snapshot {
            productive: true,
            open: 1,
            write_blocked_since: Some(50_000),
            ..fresh(1_000)
        };
        assert_eq!(verdict(&s, 55_000, &T), Verdict::Keep(60_000));
        assert_eq!(
            verdict(&s, 60_000, &T),
            Verdict::Close(Reason::WriteBlocked)
        );
        let unread = Snapshot {
            productive: true,
            open: 3,
            sending: 3,
            send_progress: 20_000,
            ..fresh(1_000)
        };
        assert_eq!(
            verdict(&unread, 30_000, &T),
            Verdict::Close(Reason::ResponseNotRead)
        );
    }

    #[test]
    fn draining_closes_after_the_grace_unless_a_request_is_open() {
        let s = Snapshot {
            productive: true,
            draining_since: Some(100_000),
            ..fresh(1_000)
        };
        assert_eq!(verdict(&s, 100_500, &T), Verdict::Keep(101_000));
        assert_eq!(verdict(&s, 101_000, &T), Verdict::Close(Reason::Drain));
        let computing = Snapshot {
            open: 1,
            computing: 1,
            ..s
        };
        assert_eq!(verdict(&computing, 105_000, &T), Verdict::Keep(Millis::MAX));
    }

    #[test]
    fn the_victim_is_the_oldest_unproductive_then_the_longest_idle() {
        let busy = Snapshot {
            productive: true,
            open: 1,
            computing: 1,
            ..fresh(0)
        };
        let idle_old = Snapshot {
            productive: true,
            idle_since: 2_000,
            last_request: 1_500,
            ..fresh(500)
        };
        let idle_new = Snapshot {
            productive: true,
            idle_since: 9_000,
            ..fresh(100)
        };
        let silent_old = fresh(3_000);
        let silent_new = fresh(8_000);
        let all = [
            (1, busy),
            (2, idle_old),
            (3, idle_new),
            (4, silent_new),
            (5, silent_old),
        ];
        assert_eq!(victim(all), Some(5));
        assert_eq!(victim(all[..3].iter().copied()), Some(2));
        assert_eq!(victim([(1, busy)]), None);
        assert_eq!(victim(Vec::<(u8, Snapshot)>::new()), None);
    }
}
