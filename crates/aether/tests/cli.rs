//! Runs the real `aether` binary: each subcommand, each file format, and each error a
//! user can make, checking the message and the exit code.

use std::path::Path;
use std::process::{Command, Output};

#[expect(
    clippy::expect_used,
    reason = "a test helper: failing loudly is the point"
)]
fn aether(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_aether"))
        .args(args)
        .output()
        .expect("the aether binary runs")
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Asserts success and returns stdout.
fn ok(args: &[&str]) -> String {
    let output = aether(args);
    assert!(
        output.status.success(),
        "aether {args:?} failed with {:?}\nstdout:\n{}\nstderr:\n{}",
        output.status.code(),
        stdout(&output),
        stderr(&output)
    );
    stdout(&output)
}

/// Asserts failure with `code` and a message containing `message`; returns stderr.
fn fails(args: &[&str], code: i32, message: &str) -> String {
    let output = aether(args);
    let err = stderr(&output);
    assert_eq!(
        output.status.code(),
        Some(code),
        "aether {args:?}\nstdout:\n{}\nstderr:\n{err}",
        stdout(&output)
    );
    assert!(
        err.contains(message),
        "aether {args:?}: expected '{message}' in:\n{err}"
    );
    assert!(
        !err.contains("panicked"),
        "a panic reached the user:\n{err}"
    );
    assert!(
        !err.contains("RUST_BACKTRACE"),
        "a backtrace hint reached the user:\n{err}"
    );
    err
}

#[expect(
    clippy::expect_used,
    reason = "a test helper: failing loudly is the point"
)]
fn path_str(path: &Path) -> &str {
    path.to_str().expect("temporary paths are UTF-8")
}

#[test]
fn demo_runs_all_22_queries_and_says_where() {
    let out = ok(&["demo", "--sf", "0.01"]);
    for n in 1..=22 {
        assert!(
            out.contains(&format!("\nQ{n} ")),
            "Q{n} missing from:\n{out}"
        );
    }
    assert!(out.contains("ran on"), "{out}");
    assert_eq!(out.matches(" CPU\n").count(), 22, "{out}");
    assert!(out.contains("\ntotal "), "{out}");
}

#[test]
fn sql_over_tpch_prints_an_aligned_table() {
    let out = ok(&[
        "sql",
        "--tpch",
        "0.01",
        "select r_name from region order by r_name",
    ]);
    let expected = "\
+-------------+
| r_name      |
+-------------+
| AFRICA      |
| AMERICA     |
| ASIA        |
| EUROPE      |
| MIDDLE EAST |
+-------------+
5 rows
";
    assert_eq!(out, expected);
}

#[test]
fn sql_formats_for_scripts() {
    let query = "select n_nationkey, n_name from nation where n_nationkey < 2 order by 1";
    let csv = ok(&["sql", "--tpch", "0.01", "--format", "csv", query]);
    assert_eq!(csv, "n_nationkey,n_name\n0,ALGERIA\n1,ARGENTINA\n");
    let json = ok(&["sql", "--tpch", "0.01", "--format", "json", query]);
    assert_eq!(
        json,
        "{\"n_nationkey\":0,\"n_name\":\"ALGERIA\"}\n{\"n_nationkey\":1,\"n_name\":\"ARGENTINA\"}\n"
    );
}

#[test]
fn sql_reads_csv_json_and_parquet_files() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("people.csv");
    std::fs::write(&csv, "id,name,score\n1,ada,9.5\n2,bob,7.25\n3,cy,\n").unwrap();
    let json = dir.path().join("events.jsonl");
    std::fs::write(
        &json,
        "{\"id\":1,\"kind\":\"click\"}\n{\"id\":1,\"kind\":\"view\"}\n{\"id\":3,\"kind\":\"click\"}\n",
    )
    .unwrap();
    let parquet = dir.path().join("scores.parquet");
    // Parquet written by Aether itself, then read back as a table.
    ok(&[
        "sql",
        &format!(
            "copy (select 1 as id, 10.5 as bonus union all select 2, 20.25) to '{}' stored as parquet",
            path_str(&parquet)
        ),
    ]);

    let out = ok(&[
        "sql",
        "--format",
        "csv",
        "--table",
        &format!("people={}", path_str(&csv)),
        "--table",
        &format!("events={}", path_str(&json)),
        "--table",
        &format!("scores={}", path_str(&parquet)),
        "select p.name, count(e.kind) as events, coalesce(s.bonus, 0) as bonus, p.score \
         from people p left join events e on p.id = e.id left join scores s on p.id = s.id \
         group by p.name, s.bonus, p.score order by p.name",
    ]);
    assert_eq!(
        out,
        "name,events,bonus,score\nada,2,10.5,9.5\nbob,0,20.25,7.25\ncy,1,0.0,\n"
    );
}

#[test]
fn sql_reads_a_directory_of_files() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.csv"), "x\n1\n2\n").unwrap();
    std::fs::write(dir.path().join("b.csv"), "x\n3\n").unwrap();
    let out = ok(&[
        "sql",
        "--format",
        "csv",
        "--table",
        &format!("t={}", path_str(dir.path())),
        "select sum(x) as total, count(*) as n from t",
    ]);
    assert_eq!(out, "total,n\n6,3\n");
}

#[test]
fn sql_runs_a_script_file_and_rapids_aliases() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("q.sql");
    std::fs::write(
        &script,
        "set spark.rapids.sql.explain = 'ALL';\n\
         create view v as select 40 as x;\n\
         select x + 2 as answer, (select value from information_schema.df_settings \
           where name = 'aether.sql.explain') as level from v;",
    )
    .unwrap();
    let output = aether(&["sql", "--format", "csv", "--file", path_str(&script)]);
    let out = stdout(&output);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(out.starts_with("answer"), "{out}");
    assert_eq!(out, "answer,level\n42,ALL\n");
    assert!(
        !stderr(&output).contains("has no effect"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn sql_explain_prints_the_physical_plan() {
    let out = ok(&[
        "sql",
        "--tpch",
        "0.01",
        "--explain",
        "select l_returnflag, sum(l_quantity) from lineitem where l_quantity > 10 group by 1",
    ]);
    assert!(out.contains("AggregateExec"), "{out}");
    assert!(out.contains("FilterExec"), "{out}");
    assert!(out.contains("DataSourceExec"), "{out}");
}

#[test]
fn datagen_writes_parquet_that_sql_and_bench_read() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("tpch");
    ok(&[
        "datagen",
        "tpch",
        "--sf",
        "0.01",
        "--out",
        path_str(&data),
        "--parts",
        "2",
    ]);
    for table in [
        "region", "nation", "supplier", "customer", "part", "partsupp", "orders", "lineitem",
    ] {
        assert!(
            data.join(table).join("part-1.parquet").is_file(),
            "{table} has no part-1.parquet"
        );
    }
    let out = ok(&[
        "sql",
        "--format",
        "csv",
        "--table",
        &format!("lineitem={}", path_str(&data.join("lineitem"))),
        "select count(*) as n from lineitem",
    ]);
    assert_eq!(out, "n\n60175\n");

    let report = dir.path().join("bench.json");
    let out = ok(&[
        "bench",
        "tpch",
        "--data",
        path_str(&data),
        "--queries",
        "1,6",
        "--iterations",
        "2",
        "--json",
        path_str(&report),
    ]);
    assert!(out.contains("\nQ1 ") && out.contains("\nQ6 "), "{out}");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    assert_eq!(report["scale_factor"], 0.01);
    assert_eq!(report["engine"], "auto");
    let queries = report["queries"].as_array().unwrap();
    assert_eq!(queries.len(), 2);
    assert_eq!(queries[0]["query"], 1);
    assert_eq!(queries[0]["rows"], 4);
    assert_eq!(queries[0]["times_ms"].as_array().unwrap().len(), 2);
    assert!(queries[0]["min_ms"].as_f64().unwrap() <= queries[0]["max_ms"].as_f64().unwrap());
}

#[test]
fn bench_generates_in_memory_by_default() {
    let out = ok(&[
        "bench",
        "tpch",
        "--sf",
        "0.01",
        "--queries",
        "6",
        "--iterations",
        "1",
    ]);
    assert!(out.contains("TPC-H SF 0.01 on auto"), "{out}");
    assert!(out.contains("\nQ6 "), "{out}");
}

#[test]
fn a_bad_statement_shows_datafusions_message_and_position() {
    fails(&["sql", "selec 1"], 2, "Line: 1, Column: 1");
    fails(
        &["sql", "--tpch", "0.01", "select nope from region"],
        2,
        "at line 1, column 8",
    );
    fails(&["sql", "select * from missing_table"], 2, "missing_table");
}

#[test]
fn input_errors_say_exactly_what_is_wrong() {
    fails(
        &["sql", "--table", "t=/no/such/file.parquet", "select 1"],
        2,
        "cannot read /no/such/file.parquet",
    );
    fails(
        &["sql", "--table", "oops", "select 1"],
        2,
        "expected NAME=PATH",
    );
    fails(
        &["sql", "--file", "/no/such/q.sql"],
        2,
        "cannot read /no/such/q.sql",
    );
    fails(&["sql"], 2, "give the SQL to run");
    fails(
        &["sql", "--bogus", "select 1"],
        2,
        "unexpected argument '--bogus'",
    );
    fails(
        &["sql", "--conf", "novalue", "select 1"],
        2,
        "expected KEY=VALUE",
    );
    fails(
        &["sql", "--conf", "aether.gpu.enabled=maybe", "select 1"],
        2,
        "invalid value 'maybe' for aether.gpu.enabled",
    );
    fails(
        &["sql", "--conf", "aether.nope=1", "select 1"],
        2,
        "unknown configuration key 'aether.nope'",
    );
    fails(&["demo", "--sf", "0"], 2, "invalid TPC-H scale factor 0");
    fails(
        &["bench", "tpch", "--queries", "23"],
        2,
        "invalid query '23'",
    );
    fails(
        &["sql", "--format", "xml", "select 1"],
        2,
        "unknown format 'xml'",
    );
}

#[test]
fn without_a_gpu_queries_run_on_the_cpu_with_one_notice() {
    let output = aether(&[
        "sql",
        "--engine",
        "gpu",
        "--tpch",
        "0.01",
        "--format",
        "csv",
        "select count(*) as n from nation; select count(*) as m from region",
    ]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(stdout(&output), "m\n5\n");
    let err = stderr(&output);
    if aether_gpu::GpuDevice::discover(0, &aether_gpu::DeviceOptions::default()).is_err() {
        assert_eq!(
            err.matches("no GPU: running on CPU because").count(),
            1,
            "{err}"
        );
    }
    fails(
        &["sql", "--engine", "tpu", "select 1"],
        2,
        "unknown engine 'tpu'",
    );
}

#[test]
fn explain_only_shows_what_would_move_in_the_rapids_format() {
    let out = ok(&[
        "sql",
        "--tpch",
        "0.01",
        "--engine",
        "gpu",
        "--conf",
        "spark.rapids.sql.mode=explainOnly",
        "--conf",
        "spark.rapids.sql.explain=ALL",
        "--format",
        "csv",
        "select sum(l_extendedprice * l_discount) as revenue from lineitem \
         where l_discount between 0.05 and 0.07 and l_quantity < 24",
    ]);
    assert!(out.starts_with("revenue\n"), "{out}");
    let output = aether(&[
        "sql",
        "--tpch",
        "0.01",
        "--engine",
        "gpu",
        "--conf",
        "aether.sql.mode=explainOnly",
        "--explain",
        "select l_returnflag, count(*) from lineitem where l_comment like '%x%' group by l_returnflag",
    ]);
    let out = stdout(&output);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(out.contains("GPU placement:\n"), "{out}");
    // Partial and final aggregate both move: the GPU table holds complete groups.
    assert_eq!(
        out.matches("*Exec <AggregateExec> will run on GPU").count(),
        2,
        "{out}"
    );
    assert!(out.contains("LIKE"), "{out}");
    // Every CPU node says why; the in-memory scan is the GPU scan, the round-robin
    // exchange above it collapses into the upload.
    assert!(
        out.contains("!Exec <ProjectionExec> cannot run on GPU because ")
            && out.contains("*Exec <DataSourceExec> will run on GPU")
            && out.contains("*Exec <RepartitionExec> will run on GPU"),
        "{out}"
    );
}

#[test]
fn conf_sets_datafusion_keys_too() {
    let out = ok(&[
        "sql",
        "--format",
        "csv",
        "--conf",
        "datafusion.execution.batch_size=1024",
        "select value as v from information_schema.df_settings \
         where name = 'datafusion.execution.batch_size'",
    ]);
    assert_eq!(out, "v\n1024\n");
}

#[test]
fn doctor_says_what_gpu_it_sees_or_why_there_is_none() {
    let out = ok(&[
        "doctor",
        "--selftest-rows",
        "100000",
        "--copy-bytes",
        "16777216",
    ]);
    assert!(out.starts_with("host:"), "{out}");
    let no_gpu = out.contains("GPU:        no GPU: running on CPU because ");
    let passed = out.contains("self-test:  PASS");
    assert!(
        no_gpu != passed,
        "expected exactly one of the no-GPU line and a passing self-test:\n{out}"
    );
}
