//! The Messages stream reader on any bytes: the SSE framer, the event decoder and the
//! assembler (`model::anthropic::decode::Intake` feeding a `model::assemble::Assembler`), as
//! the Anthropic client runs them.
//!
//! Invariants: nothing panics in any event order; the borrowed fast path (`push_payload`)
//! gives the step and the reply the owned path (`decode` then `Assembler::push`) gives; the
//! assembled reply converts to a message and its finished blocks read back.
#![no_main]

use std::ops::ControlFlow;

use agentloop::internals::anthropic::{Intake, decode, push_payload};
use agentloop::internals::anthropic::Parser;
use agentloop::model::assemble::{Assembler, Step};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // The client's path: the intake decodes each framed event and pushes it.
    let mut intake_asm = Assembler::new();
    let mut intake_steps = Vec::new();
    let failure = {
        let mut intake = Intake::new(&mut intake_asm, |step: Step<'_>| intake_steps.push(format!("{step:?}")));
        let _ = Parser::new().feed_with(data, &mut intake);
        intake.failure()
    };

    // The same events through both decoders, side by side.
    let mut payloads = Vec::new();
    let _ = Parser::new().feed(data, |event| {
        payloads.push(event.data.to_owned());
        ControlFlow::Continue(())
    });
    let (mut viewed, mut owned) = (Assembler::new(), Assembler::new());
    let mut steps = Vec::new();
    let mut first_error = None;
    for payload in &payloads {
        let step = push_payload(&mut viewed, payload).map(|step| format!("{step:?}"));
        let reference = decode(payload).and_then(|event| owned.push(event)).map(|step| format!("{step:?}"));
        assert_eq!(step, reference, "the borrowed view disagrees on {payload:?}");
        match step {
            Ok(step) => {
                let last = step == "Stopped" || step.starts_with("Failed(");
                steps.push(step);
                if last {
                    break;
                }
            }
            Err(error) => {
                first_error = Some(error);
                break;
            }
        }
    }
    assert_eq!(steps, intake_steps, "the intake reported other steps");
    assert_eq!(first_error, failure, "the intake kept another failure");

    for index in 0..viewed.block_count() {
        let _ = viewed.finished_block(index);
    }
    let (viewed, owned, intake) = (viewed.finish(), owned.finish(), intake_asm.finish());
    assert_eq!(viewed, owned, "the two decoders assembled different replies");
    assert_eq!(viewed, intake, "the intake assembled another reply");
    let _ = viewed.into_message();
});
