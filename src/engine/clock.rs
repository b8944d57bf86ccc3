//! Time as the engine sees it: elapsed time for the trace, and sleeps for backoff.
//! Tests use [`VirtualClock`] so retries cost no wall time.

use std::sync::Mutex;
use std::time::Duration;

use futures::future::BoxFuture;

/// A source of elapsed time and sleeps.
pub trait Clock: Send + Sync {
    /// Time since the clock was made.
    fn elapsed(&self) -> Duration;
    /// Wait `d`.
    fn sleep(&self, d: Duration) -> BoxFuture<'_, ()>;
}

/// The real clock.
#[derive(Debug)]
pub struct SystemClock {
    start: tokio::time::Instant,
}

impl SystemClock {
    /// A clock starting now.
    pub fn new() -> Self {
        SystemClock { start: tokio::time::Instant::now() }
    }
}

impl Default for SystemClock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock for SystemClock {
    fn elapsed(&self) -> Duration {
        self.start.elapsed()
    }

    fn sleep(&self, d: Duration) -> BoxFuture<'_, ()> {
        Box::pin(tokio::time::sleep(d))
    }
}

/// A clock whose time only moves when someone sleeps on it: sleeps return at once.
#[derive(Debug, Default)]
pub struct VirtualClock {
    now: Mutex<Duration>,
}

impl VirtualClock {
    /// A clock at zero.
    pub fn new() -> Self {
        Self::default()
    }
}

impl Clock for VirtualClock {
    fn elapsed(&self) -> Duration {
        *self.now.lock().expect("clock lock is never poisoned")
    }

    fn sleep(&self, d: Duration) -> BoxFuture<'_, ()> {
        *self.now.lock().expect("clock lock is never poisoned") += d;
        Box::pin(std::future::ready(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn virtual_clock_advances_only_on_sleep() {
        let c = VirtualClock::new();
        assert_eq!(c.elapsed(), Duration::ZERO);
        c.sleep(Duration::from_millis(1500)).await;
        assert_eq!(c.elapsed(), Duration::from_millis(1500));
    }
}
