//! All 22 TPC-H queries at scale factor 1 give the official answers
//! (`tpchgen::q_and_a::answers_sf1`), through the same query text `demo` and `bench` run.
//!
//! One test generates SF1 once (about 8.7 million rows) and checks every query, reporting
//! all differences rather than stopping at the first.

use aether::AetherContext;
use aether::tpch::{QUERY_NUMBERS, check_sf1_answer, register_tpch, run_query};

#[tokio::test(flavor = "multi_thread")]
async fn all_22_queries_match_the_official_sf1_answers() {
    let context = AetherContext::new();
    let load = register_tpch(&context, 1.0).expect("TPC-H SF1 generates");
    println!("generated SF1 in {:.1} s", load.elapsed.as_secs_f64());

    let mut failures = Vec::new();
    for n in QUERY_NUMBERS {
        match run_query(&context, n, 1.0).await {
            Ok(run) => {
                println!("Q{n}: {} rows in {:?}", run.num_rows(), run.elapsed);
                if let Err(why) = check_sf1_answer(n, &run.batches) {
                    failures.push(why);
                }
            }
            Err(e) => failures.push(format!("Q{n} failed: {e}")),
        }
    }
    assert!(
        failures.is_empty(),
        "{} of 22 queries differ from the official answers:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
