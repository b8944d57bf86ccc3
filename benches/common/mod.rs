//! Pieces the benchmarks share: a deterministic generator for their inputs, realistic Bash
//! command lines built on it, and the ratio of two functions measured in interleaved rounds.

// Each benchmark that includes this file uses only part of it.
#![allow(dead_code)]

pub mod child;
pub mod commands;
pub mod turn_server;

use std::hint::black_box;
use std::time::{Duration, Instant};

/// A small deterministic generator (xorshift), so every run sees the same input.
pub struct Rng(pub u64);

impl Rng {
    /// The next number below `n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// Two functions timed in alternation: per round, the time of `iters` calls of one over the
/// time of `iters` calls of the other.
pub struct Interleaved {
    /// The per-round ratios, smallest first.
    pub ratios: Vec<f64>,
    /// The mean time of one call of the first function.
    pub first_each: Duration,
    /// The mean time of one call of the second function.
    pub second_each: Duration,
}

impl Interleaved {
    /// Time `first` and `second` over `rounds` rounds of `iters` calls each. Within a round the
    /// two alternate, and which goes first alternates between rounds, so neither gains from
    /// running second (warm caches, a freshly freed buffer) and drift in the machine's speed
    /// falls on both alike.
    pub fn measure(rounds: usize, iters: usize, first: &dyn Fn() -> usize, second: &dyn Fn() -> usize) -> Self {
        let time = |f: &dyn Fn() -> usize| {
            let start = Instant::now();
            for _ in 0..iters {
                black_box(f());
            }
            start.elapsed()
        };
        let mut ratios = Vec::with_capacity(rounds);
        let (mut first_total, mut second_total) = (Duration::ZERO, Duration::ZERO);
        for round in 0..rounds {
            let (first_time, second_time) = if round % 2 == 0 {
                let first_time = time(first);
                (first_time, time(second))
            } else {
                let second_time = time(second);
                (time(first), second_time)
            };
            ratios.push(first_time.as_secs_f64() / second_time.as_secs_f64());
            first_total += first_time;
            second_total += second_time;
        }
        ratios.sort_by(f64::total_cmp);
        let calls = (rounds * iters) as u32;
        Interleaved { ratios, first_each: first_total / calls, second_each: second_total / calls }
    }

    /// The median ratio.
    pub fn median(&self) -> f64 {
        self.ratios[self.ratios.len() / 2]
    }

    /// The smallest ratio.
    pub fn lowest(&self) -> f64 {
        self.ratios[0]
    }

    /// The largest ratio.
    pub fn highest(&self) -> f64 {
        self.ratios[self.ratios.len() - 1]
    }
}
