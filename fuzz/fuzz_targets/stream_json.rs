//! The stream-json input frames of `--input-format stream-json` (`sdk::wire::parse`, one
//! line of stdin), and the echo `--replay-user-messages` prints for a user frame.
#![no_main]

use agentloop::internals::sdk::{Inbound, parse, replay};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // stdin is read line by line and a line that is not UTF-8 is skipped.
    let Ok(text) = std::str::from_utf8(data) else { return };
    for line in text.lines() {
        if let Inbound::User { prompt, frame } = parse(line) {
            let echo = replay(&frame, "00000000-0000-4000-8000-000000000000");
            assert_eq!(echo["type"], "user");
            assert_eq!(echo["message"], frame["message"]);
            let _ = prompt.text.len();
        }
    }
});
