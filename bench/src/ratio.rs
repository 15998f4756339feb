//! The backlog's drain against the stored burst, in alternated rounds: the two figures
//! a minute apart on this machine can differ by a tenth, so each is taken several
//! times, side by side, and their medians compared.

use anyhow::Result;

use super::backend::BackendArgs;
use super::burst::{self, BacklogArgs, BurstArgs};

#[derive(clap::Args)]
pub struct RatioArgs {
    /// How many rounds (a burst, then a backlog, each).
    #[arg(long, default_value_t = 3)]
    rounds: usize,
    #[command(flatten)]
    backend: BackendArgs,
}

pub async fn run(args: RatioArgs) -> Result<()> {
    let (mut bursts, mut backlogs) = (Vec::new(), Vec::new());
    for round in 1..=args.rounds {
        println!("== round {round} of {}: the stored burst", args.rounds);
        bursts.push(burst::burst(BurstArgs::stored(args.backend.clone()), 0).await?);
        println!("== round {round} of {}: the backlog", args.rounds);
        backlogs.push(burst::backlog(BacklogArgs::after_downtime(args.backend.clone())).await?);
    }
    let (burst, backlog) = (median(&bursts), median(&backlogs));
    println!("== summary");
    println!(
        "bursts:            {} /s (median {burst:.0}/s)",
        list(&bursts)
    );
    println!(
        "backlogs:          {} /s (median {backlog:.0}/s)",
        list(&backlogs)
    );
    let rounds: Vec<String> = (bursts.iter().zip(&backlogs))
        .map(|(b, l)| format!("{:.0} %", 100.0 * l / b))
        .collect();
    println!(
        "backlog / burst:   {:.0} % of the medians ({} round by round)",
        100.0 * backlog / burst,
        rounds.join(", ")
    );
    Ok(())
}

fn median(values: &[f64]) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => 0.0,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

fn list(values: &[f64]) -> String {
    let v: Vec<String> = values.iter().map(|x| format!("{x:.0}")).collect();
    v.join(", ")
}
