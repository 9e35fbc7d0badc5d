//! A benchmark's CSV file read back by the suite's report: a free-text field (a
//! failed run's problem, say) with a quote and a comma in it comes back whole, and
//! the fields after it stay in their columns.

use lutra_bench::fields;
use lutra_bench::harness::csv::{Csv, Table};

#[test]
fn a_quoted_field_with_a_quote_and_a_comma_round_trips() {
    let problem = r#"exit 1: error "bad argument #1 to 'send'", then stop"#;
    let path = std::env::temp_dir().join(format!(
        "lutra-bench-csv-round-trip-{}.csv",
        std::process::id()
    ));
    let mut csv = Csv::with_header(&path, "bench,problem,seconds").unwrap();
    csv.write_records([fields!["luabench", problem, "1.5"], fields!["gil", "", "2"]])
        .unwrap();
    drop(csv);
    let table = Table::read(&path);
    std::fs::remove_file(&path).unwrap();
    let table = table.unwrap();
    let records: Vec<_> = table.records().collect();
    assert_eq!(records.len(), 2);
    assert_eq!(records[0].get("problem"), problem);
    assert_eq!(records[0].num("seconds"), Some(1.5));
    assert_eq!(records[1].get("bench"), "gil");
    assert_eq!(records[1].get("problem"), "");
}

#[test]
fn a_doubled_quote_inside_quotes_reads_as_one_quote() {
    let table = Table::parse("a,b\n\"say \"\"hi\"\", then go\",x\n").unwrap();
    let record = table.records().next().unwrap();
    assert_eq!(record.get("a"), r#"say "hi", then go"#);
    assert_eq!(record.get("b"), "x");
}

#[test]
fn a_record_of_another_length_than_the_header_is_refused() {
    let path =
        std::env::temp_dir().join(format!("lutra-bench-csv-length-{}.csv", std::process::id()));
    let mut csv = Csv::with_header(&path, "a,b").unwrap();
    let written = csv.write_records([fields!["only one"]]);
    drop(csv);
    std::fs::remove_file(&path).unwrap();
    assert!(written.is_err());
}
