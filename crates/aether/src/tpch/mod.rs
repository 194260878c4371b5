//! Built-in TPC-H: the tables generated in memory, the 22 queries with the
//! specification's validation parameters, and the official SF1 answers.

pub mod answers;
pub mod memory;
pub mod queries;
pub mod run;
pub mod tables;

pub use answers::check_sf1_answer;
pub use memory::{TpchLoad, generate_tpch, generation_jobs, register_tpch, validate_scale_factor};
pub use queries::{QUERY_NUMBERS, parse_query_list, query_sql, row_limit};
pub use run::{QueryRun, explain_analyze, run_query};
pub use tables::TpchTable;
