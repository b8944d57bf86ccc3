//! The spend cap (`--max-budget-usd`): before a request is sent, what it may cost at most must
//! fit what is left of the budget.
//!
//! A request's projected cost is its prompt at cache-aware prices plus its whole output cap
//! (`max_tokens`, which the reply cannot exceed) at the output price, from the one price table
//! ([`crate::model::anthropic::pricing`]). The prompt is priced as the API prices it: what the
//! last main request left in the prompt cache (its reported cache reads and writes) as cache
//! reads, everything else as cache writes (the client marks the whole prompt for caching, and a
//! write costs more than an uncached read), the new part estimated from its characters. When
//! the output cap does not fit, it is lowered to what does, down to [`MIN_OUTPUT_TOKENS`];
//! below that the request is not sent and the table ends the run (`request.budget_exhausted`).
//! After each request, what it really cost (its usage at the same prices) is charged.
//!
//! Unlike a check after each call, this keeps a run's spend under the cap as far as the prompt
//! estimate holds: the output part, usually the larger, is exact.

use std::time::Duration;

use crate::model::anthropic::pricing::{Price, UNITS_PER_USD, cost_units};
use crate::protocol::Usage;

/// The smallest output cap a request is sent with when the budget lowers it: below it a reply
/// is too short to be worth its prompt.
pub const MIN_OUTPUT_TOKENS: u32 = 1024;

/// How long the API keeps a prompt written to the 5-minute cache (the one this client asks
/// for): after that the cached prefix is priced as a write again.
pub const CACHE_TTL: Duration = Duration::from_secs(300);

/// What the last main request left in the prompt cache.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CachedPrefix {
    /// The model it was sent to (each model has its own cache).
    pub model: String,
    /// Characters of that request's prompt (system, tools and messages).
    pub chars: usize,
    /// Its prompt tokens the API read from or wrote to the cache: cached now.
    pub cached_tokens: u64,
    /// Its prompt tokens the API did not cache.
    pub uncached_tokens: u64,
    /// When its reply ended, on the run's clock.
    pub at: Duration,
}

/// The prompt of the next request, split as the API will bill it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Prompt {
    /// Tokens expected to be read from the cache.
    pub cached_tokens: u64,
    /// Tokens expected to be written to it.
    pub new_tokens: u64,
}

impl Prompt {
    /// The prompt of `chars` characters to `model` at time `now`, given what the last main
    /// request cached; `estimate` turns characters into tokens.
    pub fn project(
        model: &str,
        chars: usize,
        now: Duration,
        cached: Option<&CachedPrefix>,
        estimate: impl Fn(usize) -> u64,
    ) -> Prompt {
        match cached {
            Some(c) if c.model == model && chars >= c.chars && now.saturating_sub(c.at) < CACHE_TTL => {
                Prompt { cached_tokens: c.cached_tokens, new_tokens: c.uncached_tokens + estimate(chars - c.chars) }
            }
            _ => Prompt { cached_tokens: 0, new_tokens: estimate(chars) },
        }
    }
}

/// Whether a request may be sent.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Admission {
    /// Send it with this output cap: the one asked for, or the lower one that fits.
    Send {
        /// The output cap.
        max_tokens: u32,
    },
    /// Do not send it: even at [`MIN_OUTPUT_TOKENS`] it could cost more than is left.
    Over(OverBudget),
}

/// A request that does not fit the budget.
#[derive(Debug, Clone, Copy, PartialEq, thiserror::Error)]
#[error("it could cost up to ${projected_usd:.6} (${prompt_usd:.6} for its prompt) and ${left_usd:.6} is left")]
pub struct OverBudget {
    /// Its projected cost at the smallest output cap, in US dollars.
    pub projected_usd: f64,
    /// The prompt's part of it.
    pub prompt_usd: f64,
    /// What was left of the budget.
    pub left_usd: f64,
}

/// Whether a request with `prompt` and output cap `max_tokens` fits in `left_usd` at `price`.
pub fn admit(price: Price, prompt: Prompt, max_tokens: u32, left_usd: f64) -> Admission {
    let usage = |output: u32| Usage {
        input_tokens: Some(0),
        output_tokens: Some(u64::from(output)),
        cache_creation_input_tokens: Some(prompt.new_tokens),
        cache_read_input_tokens: Some(prompt.cached_tokens),
    };
    let left = (left_usd.max(0.0) * UNITS_PER_USD).floor() as u128;
    let prompt_units = cost_units(price, &usage(0));
    let floor = MIN_OUTPUT_TOKENS.min(max_tokens);
    let affordable = left.checked_sub(prompt_units).map(|rest| rest / u128::from(price.output.max(1)));
    match affordable {
        Some(tokens) if tokens >= u128::from(floor) => {
            Admission::Send { max_tokens: u32::try_from(tokens).unwrap_or(u32::MAX).min(max_tokens) }
        }
        _ => Admission::Over(OverBudget {
            projected_usd: cost_units(price, &usage(floor)) as f64 / UNITS_PER_USD,
            prompt_usd: prompt_units as f64 / UNITS_PER_USD,
            left_usd: left_usd.max(0.0),
        }),
    }
}

/// The message of a run the budget ended: the cap, then why the next request was not sent.
pub fn exhausted_message(cap_usd: f64, over: &OverBudget) -> String {
    format!("reached the maximum budget of ${cap_usd}: the next request was not sent, as {over}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::anthropic::pricing::price;

    fn estimate(chars: usize) -> u64 {
        chars.div_ceil(4) as u64
    }

    /// Haiku 4.5: $1 in, $5 out, $1.25 cache write, $0.10 cache read per million tokens.
    #[test]
    fn the_output_cap_is_lowered_to_what_fits() {
        let haiku = price("claude-haiku-4-5").unwrap();
        let prompt = Prompt { cached_tokens: 0, new_tokens: 2000 };
        // The prompt costs $0.0025; $0.01 leaves $0.0075, that is 1500 output tokens.
        assert_eq!(admit(haiku, prompt, 16_000, 0.01), Admission::Send { max_tokens: 1500 });
        assert_eq!(admit(haiku, prompt, 1200, 0.01), Admission::Send { max_tokens: 1200 });
        // $0.007 leaves 900 tokens, under the floor.
        assert_eq!(
            admit(haiku, prompt, 16_000, 0.007),
            Admission::Over(OverBudget { projected_usd: 0.00762, prompt_usd: 0.0025, left_usd: 0.007 })
        );
        // A prompt over the budget on its own.
        assert!(matches!(admit(haiku, prompt, 16_000, 0.002), Admission::Over(_)));
        assert!(matches!(admit(haiku, prompt, 16_000, -1.0), Admission::Over(o) if o.left_usd == 0.0));
    }

    /// What the last request cached is priced as a read, the rest as a write.
    #[test]
    fn the_cached_prefix_is_priced_as_a_read() {
        let cached = CachedPrefix {
            model: "claude-haiku-4-5".into(),
            chars: 40_000,
            cached_tokens: 10_000,
            uncached_tokens: 3,
            at: Duration::from_secs(10),
        };
        let now = Duration::from_secs(20);
        let next = Prompt::project("claude-haiku-4-5", 40_400, now, Some(&cached), estimate);
        assert_eq!(next, Prompt { cached_tokens: 10_000, new_tokens: 103 });
        let fresh = Prompt { cached_tokens: 0, new_tokens: 10_100 };
        assert_eq!(Prompt::project("claude-sonnet-4-5", 40_400, now, Some(&cached), estimate), fresh);
        assert_eq!(
            Prompt::project("claude-haiku-4-5", 40_400, Duration::from_secs(400), Some(&cached), estimate),
            fresh
        );
        assert_eq!(Prompt::project("claude-haiku-4-5", 40_400, now, None, estimate), fresh);
        // A rewritten (shorter) history is not the cached one.
        assert_eq!(
            Prompt::project("claude-haiku-4-5", 400, now, Some(&cached), estimate),
            Prompt { cached_tokens: 0, new_tokens: 100 }
        );
    }
}
