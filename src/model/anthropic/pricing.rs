//! What a request costs, in US dollars, from the token counts the API reports.
//!
//! [`PRICES`] is the one table to update when prices change (source: the API's pricing page,
//! checked for the models below). Prices are in US cents per million tokens so that the
//! arithmetic is exact. A model is matched by the first entry whose prefix starts its name,
//! after anything before `claude-` is dropped (so `us.anthropic.claude-…` and dated names such
//! as `claude-sonnet-4-5-20250929` match too); more specific prefixes come first.
//!
//! Cache writes are priced at the 5-minute rate, the only cache this client asks for. The
//! long-context surcharge some models charge above 200K prompt tokens is not modelled.

use crate::protocol::Usage;

/// Prices of one model family, in US cents per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Price {
    /// Uncached prompt tokens.
    pub input: u64,
    /// Generated tokens.
    pub output: u64,
    /// Prompt tokens written to the 5-minute cache.
    pub cache_write: u64,
    /// Prompt tokens read from the cache.
    pub cache_read: u64,
}

const fn cents(input: u64, output: u64, cache_write: u64, cache_read: u64) -> Price {
    Price { input, output, cache_write, cache_read }
}

/// `(model-name prefix, price)`, most specific prefix first.
pub const PRICES: &[(&str, Price)] = &[
    // Opus 4.5 and later: $5 in, $25 out.
    ("claude-opus-4-8", cents(500, 2500, 625, 50)),
    ("claude-opus-4-7", cents(500, 2500, 625, 50)),
    ("claude-opus-4-6", cents(500, 2500, 625, 50)),
    ("claude-opus-4-5", cents(500, 2500, 625, 50)),
    // Opus 4 and 4.1: $15 in, $75 out.
    ("claude-opus-4-1", cents(1500, 7500, 1875, 150)),
    ("claude-opus-4", cents(1500, 7500, 1875, 150)),
    ("claude-sonnet-4", cents(300, 1500, 375, 30)),
    ("claude-haiku-4-5", cents(100, 500, 125, 10)),
    ("claude-3-7-sonnet", cents(300, 1500, 375, 30)),
    ("claude-3-5-sonnet", cents(300, 1500, 375, 30)),
    ("claude-3-5-haiku", cents(80, 400, 100, 8)),
    ("claude-3-opus", cents(1500, 7500, 1875, 150)),
    ("claude-3-haiku", cents(25, 125, 30, 3)),
];

/// The price of `model`, if the table knows it.
pub fn price(model: &str) -> Option<Price> {
    let name = model.find("claude-").map_or(model, |at| &model[at..]);
    PRICES.iter().find(|(prefix, _)| name.starts_with(prefix)).map(|(_, price)| *price)
}

/// Cost units per US dollar: a price in cents per million tokens times a token count is in
/// units of 10⁻⁸ dollars.
pub const UNITS_PER_USD: f64 = 100_000_000.0;

/// The cost of `usage` at `price`, exactly, in units of 10⁻⁸ US dollars ([`UNITS_PER_USD`]).
/// Missing counts count as zero. The spend cap prices a request before it is sent with the
/// usage it may at most report ([`crate::engine::budget`]).
pub fn cost_units(price: Price, usage: &Usage) -> u128 {
    let tokens = |count: Option<u64>| u128::from(count.unwrap_or(0));
    tokens(usage.input_tokens) * u128::from(price.input)
        + tokens(usage.output_tokens) * u128::from(price.output)
        + tokens(usage.cache_creation_input_tokens) * u128::from(price.cache_write)
        + tokens(usage.cache_read_input_tokens) * u128::from(price.cache_read)
}

/// The cost of `usage` on `model` in US dollars; `None` for a model the table does not know.
/// Missing counts count as zero.
pub fn cost_usd(model: &str, usage: &Usage) -> Option<f64> {
    // One rounding, at the very end.
    Some(cost_units(price(model)?, usage) as f64 / UNITS_PER_USD)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usage(input: u64, output: u64, write: u64, read: u64) -> Usage {
        Usage {
            input_tokens: Some(input),
            output_tokens: Some(output),
            cache_creation_input_tokens: Some(write),
            cache_read_input_tokens: Some(read),
        }
    }

    #[test]
    fn prices_by_family() {
        let million = usage(1_000_000, 1_000_000, 1_000_000, 1_000_000);
        assert_eq!(cost_usd("claude-sonnet-4-5-20250929", &million), Some(22.05));
        assert_eq!(cost_usd("claude-sonnet-4-20250514", &million), Some(22.05));
        assert_eq!(cost_usd("claude-opus-4-5-20251101", &million), Some(36.75));
        assert_eq!(cost_usd("claude-opus-4-6", &million), Some(36.75));
        assert_eq!(cost_usd("claude-opus-4-1-20250805", &million), Some(110.25));
        assert_eq!(cost_usd("claude-opus-4-20250514", &million), Some(110.25));
        assert_eq!(cost_usd("claude-haiku-4-5-20251001", &million), Some(7.35));
        assert_eq!(cost_usd("claude-3-5-haiku-20241022", &million), Some(5.88));
        assert_eq!(cost_usd("claude-3-haiku-20240307", &million), Some(1.83));
    }

    #[test]
    fn a_typical_turn() {
        // 2,000 fresh input, 150,000 read from the cache, 8,000 written, 1,234 out on Sonnet:
        // 2000*3 + 1234*15 + 8000*3.75 + 150000*0.30 = 99,510 dollars per million tokens.
        let turn = usage(2_000, 1_234, 8_000, 150_000);
        assert_eq!(cost_usd("claude-sonnet-4-5", &turn), Some(0.09951));
    }

    #[test]
    fn missing_counts_are_zero_and_unknown_models_have_no_price() {
        let only_output = Usage { output_tokens: Some(2_000), ..Usage::default() };
        assert_eq!(cost_usd("claude-haiku-4-5", &only_output), Some(0.01));
        assert_eq!(cost_usd("claude-sonnet-4-5", &Usage::default()), Some(0.0));
        assert_eq!(cost_usd("gpt-4o", &only_output), None);
        assert_eq!(cost_usd("scripted", &only_output), None);
    }

    #[test]
    fn provider_prefixes_and_suffixes_are_tolerated() {
        assert_eq!(price("us.anthropic.claude-sonnet-4-5-20250929-v1:0"), price("claude-sonnet-4-5"));
        assert_eq!(price("claude-sonnet-4-5[1m]"), Some(cents(300, 1500, 375, 30)));
    }

    #[test]
    fn no_entry_is_shadowed_by_an_earlier_one() {
        for (i, (later, _)) in PRICES.iter().enumerate() {
            for (earlier, _) in &PRICES[..i] {
                assert!(!later.starts_with(earlier), "{earlier} hides {later}");
            }
        }
    }
}
