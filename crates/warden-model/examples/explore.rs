//! Runs the checker on one rule and prints the states explored, the time, and each discovery's
//! trace: `cargo run -p warden-model --example explore -- [proposed|tightened|BUG]`.

use warden_model::{explain, Bug, ClockModel, Rule};

fn main() {
    let arg = std::env::args().nth(1).unwrap_or_else(|| "proposed".into());
    let rule = match arg.as_str() {
        "proposed" => Rule::proposed(),
        "tightened" => Rule::tightened(),
        "applied-now" => Rule::with_bug(Bug::BaseFromAppliedNow),
        "own-clock" => Rule::with_bug(Bug::BaseFromOwnClock),
        "now-backwards" => Rule::with_bug(Bug::NowBackwards),
        "instant-from-stamp" => Rule::with_bug(Bug::InstantFromStamp),
        "heard-not-scaled" => Rule::with_bug(Bug::HeardNotScaled),
        other => panic!("unknown rule {other}"),
    };
    let mut model = ClockModel::new(rule, warden_model::Bounds::LEADER_CHANGES);
    let env = |name: &str| std::env::var(name).ok().and_then(|v| v.parse::<u32>().ok());
    if let Some(steps) = env("HORIZON_STEPS") {
        model.bounds.horizon = steps * warden_model::rule::STEP;
    }
    if let Some(n) = env("CRASHES") {
        model.bounds.crashes = n as u8;
    }
    if let Some(n) = env("ELECTIONS") {
        model.bounds.elections = n as u8;
    }
    if let Some(n) = env("LOG") {
        model.bounds.log_len = n as usize;
    }
    if let Some(n) = env("SENDS") {
        model.bounds.sends = n as u8;
    }
    if env("QUIET").is_some() {
        let stop = if env("FIRST").is_some() {
            warden_model::Stop::FirstFailure
        } else {
            warden_model::Stop::Exhaustive
        };
        let report = warden_model::check(model, 2, stop);
        println!(
            "{arg}: {} states in {:?}; {:?}",
            report.states,
            report.elapsed,
            report.discoveries.keys()
        );
        return;
    }
    let property: &'static str = match std::env::var("PROPERTY").as_deref() {
        Ok("L2") => "L2",
        Ok("L4") => "L4",
        _ => "S4",
    };
    match explain(&model, property, 2) {
        Some(trace) => println!("{arg}: shortest counterexample to {property}:\n{trace}"),
        None => println!("{arg}: no counterexample to {property}"),
    }
}
