//! `aether demo`: TPC-H generated in memory, the 22 queries, where each ran and how long
//! it took. Needs no data and no GPU.

use clap::Args;

use super::{CommonArgs, format_ms};
use crate::error::Result;
use crate::tpch::{QUERY_NUMBERS, check_sf1_answer, register_tpch, run_query};

#[derive(Debug, Args)]
pub struct DemoArgs {
    /// TPC-H scale factor (1 is about 1 GB of data). At 1, the default, every result is
    /// checked against the official answers.
    #[arg(long, value_name = "SF", default_value_t = 1.0)]
    sf: f64,
    #[command(flatten)]
    common: CommonArgs,
}

pub async fn run(args: DemoArgs) -> Result<()> {
    let context = args.common.context()?;
    eprintln!("Generating TPC-H at scale factor {} in memory...", args.sf);
    let load = register_tpch(&context, args.sf)?;
    eprintln!(
        "Generated {} rows in {:.1} s.",
        load.rows,
        load.elapsed.as_secs_f64()
    );
    // The official answers exist for SF1 only; there every result is checked.
    let check = args.sf == 1.0;
    let header = format!(
        "{:<6} {:>8} {:>11}  {:<7}{}",
        "query",
        "rows",
        "time (ms)",
        "ran on",
        if check { "  answer" } else { "" }
    );
    println!("{}", header.trim_end());
    let mut total_ms = 0.0;
    let mut mismatches = 0;
    for n in QUERY_NUMBERS {
        let run = run_query(&context, n, args.sf).await?;
        let ms = run.elapsed.as_secs_f64() * 1e3;
        total_ms += ms;
        let verdict = match check.then(|| check_sf1_answer(n, &run.batches)) {
            None => String::new(),
            Some(Ok(())) => "  ok".to_string(),
            Some(Err(why)) => {
                mismatches += 1;
                format!("  WRONG: {why}")
            }
        };
        let line = format!(
            "{:<6} {:>8} {:>11}  {:<7}{verdict}",
            format!("Q{n}"),
            run.num_rows(),
            format_ms(ms),
            run.ran_on(),
        );
        println!("{}", line.trim_end());
    }
    println!("{:<6} {:>8} {:>11}", "total", "", format_ms(total_ms));
    if mismatches > 0 {
        return Err(crate::error::AetherError::Failed(format!(
            "{mismatches} queries differ from the official TPC-H answers"
        )));
    }
    Ok(())
}
