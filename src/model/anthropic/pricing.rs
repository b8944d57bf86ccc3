//! What a request costs, in US dollars, from the token counts the API reports.
//!
//! [`PRICES`] is the one table to update when prices change (source: the API's pricing page,
//! checked for the models below). A model is matched by the first entry whose prefix starts
//! its name, after anything before `claude-` is dropped (so `us.anthropic.claude-…` and dated
//! names such as `claude-sonnet-4-5-20250929` match too); more specific prefixes come first.
//!
//! The user's own prices (the settings' `modelPrices`, [`set_user_prices`]) extend the table:
//! a local or third-party model is priced only where the user says what it costs. They never
//! override it, so a project's settings file cannot make Claude's tokens free and lift a spend
//! cap. A model nobody priced has no cost (`None`): its cost is unknown, never a guess at
//! Sonnet's.
//!
//! Prices are in millionths of a US dollar per million tokens, so that the arithmetic is
//! exact. Cache writes are priced at the 5-minute rate, the only cache this client asks for.
//! The long-context surcharge some models charge above 200K prompt tokens is not modelled.

use std::sync::OnceLock;

use crate::protocol::Usage;

/// Prices of one model family, in millionths of a US dollar per million tokens.
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

/// A price given in US cents per million tokens.
const fn cents(input: u64, output: u64, cache_write: u64, cache_read: u64) -> Price {
    const MICROS_PER_CENT: u64 = 10_000;
    Price {
        input: input * MICROS_PER_CENT,
        output: output * MICROS_PER_CENT,
        cache_write: cache_write * MICROS_PER_CENT,
        cache_read: cache_read * MICROS_PER_CENT,
    }
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

/// The user's prices, by model-name prefix, longest prefix first; set once per process.
static USER_PRICES: OnceLock<Vec<(String, Price)>> = OnceLock::new();

/// Price the models [`PRICES`] does not know as the user says (the settings' `modelPrices`:
/// a model-name prefix and its price, the longest matching prefix winning). The first call
/// wins: a process runs with the settings it started with. Returns whether this call set them.
pub fn set_user_prices(mut prices: Vec<(String, Price)>) -> bool {
    prices.sort_by(|(a, _), (b, _)| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
    USER_PRICES.set(prices).is_ok()
}

/// The price of `model`: the table's, or the user's; `None` when nobody priced it.
pub fn price(model: &str) -> Option<Price> {
    let name = model.find("claude-").map_or(model, |at| &model[at..]);
    if let Some((_, price)) = PRICES.iter().find(|(prefix, _)| name.starts_with(prefix)) {
        return Some(*price);
    }
    let users = USER_PRICES.get().map(Vec::as_slice).unwrap_or_default();
    users.iter().find(|(prefix, _)| model.starts_with(prefix.as_str())).map(|(_, price)| *price)
}

/// Cost units per US dollar: a price in millionths of a dollar per million tokens times a
/// token count is in units of 10⁻¹² dollars.
pub const UNITS_PER_USD: f64 = 1_000_000_000_000.0;

/// The cost of `usage` at `price`, exactly, in units of 10⁻¹² US dollars ([`UNITS_PER_USD`]).
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

    /// The only test that sets the process's user prices (the first call wins), with
    /// prefixes no other test prices.
    #[test]
    fn user_prices_extend_the_table_and_never_override_it() {
        let local = Price { input: 100_000, output: 300_000, cache_write: 100_000, cache_read: 10_000 };
        let free = Price { input: 0, output: 0, cache_write: 0, cache_read: 0 };
        assert!(set_user_prices(vec![
            ("local-test-".into(), free),
            ("local-test-coder".into(), local),
            ("claude-sonnet".into(), free),
        ]));
        assert!(!set_user_prices(Vec::new()), "the first call wins");
        assert_eq!(price("local-test-coder-7b"), Some(local), "the longest prefix");
        assert_eq!(price("local-test-chat"), Some(free));
        assert_eq!(price("claude-sonnet-4-5"), Some(cents(300, 1500, 375, 30)), "the table's price stands");
        assert_eq!(price("unpriced-elsewhere"), None);
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
