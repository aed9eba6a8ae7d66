//! CSV text of the `paper` subcommands' results, written through the `csv`
//! crate so that a field holding a comma, a quote or a line break is quoted
//! and escaped (a label is free text).

use serde::Serialize;

/// The CSV of `records`: a header line of the field names, then one line per
/// record (nothing at all when there are no records).
pub fn from_records<T: Serialize>(records: impl IntoIterator<Item = T>) -> String {
    let mut writer = csv::Writer::from_writer(Vec::new());
    for record in records {
        writer.serialize(record).expect("a flat record of numbers and strings always serialises");
    }
    finish(writer)
}

/// The CSV of a `header` line and `rows` of fields already formatted.
pub fn from_rows<R: IntoIterator<Item = String>>(header: &[&str], rows: impl IntoIterator<Item = R>) -> String {
    let mut writer = csv::Writer::from_writer(Vec::new());
    writer.write_record(header).expect("writing into memory cannot fail");
    for row in rows {
        writer.write_record(row).expect("every row has as many fields as the header");
    }
    finish(writer)
}

fn finish(writer: csv::Writer<Vec<u8>>) -> String {
    let bytes = writer.into_inner().expect("flushing into memory cannot fail");
    String::from_utf8(bytes).expect("CSV of UTF-8 fields is UTF-8")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize)]
    struct Record {
        name: &'static str,
        rate: f64,
        measured: Option<f64>,
    }

    #[test]
    fn header_from_field_names_quoting_and_empty_options() {
        let text = from_records([
            Record { name: "plain", rate: 0.25, measured: Some(1e-7) },
            Record { name: "a, \"b\"", rate: 2.0, measured: None },
        ]);
        assert_eq!(text, "name,rate,measured\nplain,0.25,1e-7\n\"a, \"\"b\"\"\",2.0,\n");
        assert_eq!(from_records(Vec::<Record>::new()), "");
        assert_eq!(from_rows(&["x", "y"], [["1".to_string(), "a\nb".to_string()]]), "x,y\n1,\"a\nb\"\n");
    }
}
