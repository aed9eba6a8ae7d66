//! The Section IV-D harness of the importance-aware paper: typed errors of
//! the stream recipes, the shape of the synthetic streams, and a small run
//! whose filters are ordered as the paper's pathwise nesting says. The
//! full-size grid is printed by
//! `cargo run --release -p bloomslice-bench --bin paper -- stable`.

use std::collections::HashSet;

use bloomslice_bench::stable_experiment::{self as experiment, Distribution, StreamConfig, StreamError};
use bloomslice_papers::{Policy, StableError, StableParams};

#[test]
fn bad_stream_configs_are_typed_errors() {
    let config = StreamConfig {
        distinct: 100,
        repeat_fraction: 0.3,
        distribution: Distribution::Uniform,
        max_importance: 50,
        seed: 1,
    };
    for bad in [-0.1, 1.0, f64::NAN, f64::INFINITY] {
        let c = StreamConfig { repeat_fraction: bad, ..config };
        assert!(matches!(experiment::synthetic_stream(&c), Err(StreamError::InvalidProbability { .. })));
    }
    assert_eq!(experiment::synthetic_stream(&StreamConfig { distinct: 0, ..config }), Err(StreamError::EmptyStream));
    assert_eq!(
        experiment::synthetic_stream(&StreamConfig { max_importance: 0, ..config }),
        Err(StreamError::Engine(StableError::ZeroMaxImportance))
    );
    let narrow = StableParams::new(1000, 3, 2, 7).unwrap().with_max_importance(10).unwrap();
    assert!(matches!(
        experiment::run(&narrow, &config, 1),
        Err(StreamError::Engine(StableError::ImportanceOutOfRange { .. }))
    ));
}

#[test]
fn synthetic_streams_have_the_requested_shape() {
    for distribution in Distribution::ALL {
        let config = StreamConfig { distinct: 4000, repeat_fraction: 0.5, distribution, max_importance: 50, seed: 9 };
        let stream = experiment::synthetic_stream(&config).unwrap();
        assert_eq!(stream.len(), 8000);
        let elements: HashSet<u32> = stream.iter().map(|s| s.element).collect();
        assert_eq!(elements.len(), 4000);
        assert!(stream.iter().all(|s| (1..=50).contains(&s.importance)));
        // Mean importance of the repeats follows the distribution.
        let mut first = HashSet::new();
        let repeats: Vec<f64> =
            stream.iter().filter(|s| !first.insert(s.element)).map(|s| f64::from(s.importance)).collect();
        let mean = repeats.iter().sum::<f64>() / repeats.len() as f64;
        match distribution {
            Distribution::Uniform => assert!((mean - 25.5).abs() < 2.0, "{mean}"),
            Distribution::Proportional => assert!(mean > 30.0, "{mean}"),
            Distribution::Inverse => assert!(mean < 18.0, "{mean}"),
        }
        assert_eq!(experiment::synthetic_stream(&config).unwrap(), stream);
    }
}

#[test]
fn small_experiment_orders_the_filters() {
    let params = StableParams::paper();
    let config = StreamConfig {
        distinct: 6000,
        repeat_fraction: 0.3,
        distribution: Distribution::Inverse,
        max_importance: 50,
        seed: 11,
    };
    let result = experiment::run(&params, &config, 5).unwrap();
    let by = |p: Policy| result.metrics.iter().find(|m| m.policy == p).unwrap();
    for m in &result.metrics {
        assert_eq!(m.count.distinct, 6000);
        assert_eq!(m.count.distinct + m.count.repeats, 6000 + 2571);
        assert_eq!(m.by_importance.iter().map(|t| t.distinct).sum::<u64>(), m.count.distinct);
        assert_eq!(m.by_importance.iter().map(|t| t.false_negatives).sum::<u64>(), m.count.false_negatives);
        assert_eq!(m.fp_by_importance().len(), 50);
        assert!(m.importance.fp_rate() <= 1.0 && m.importance.fn_rate() <= 1.0);
    }
    // The plain BF never forgets; the filters are nested pathwise (same
    // stream, same decrement draws): BF >= SBF >= IBF-MC and SBF >= IBF-2C.
    assert_eq!(by(Policy::Bf).count.false_negatives, 0);
    assert!(by(Policy::Bf).count.false_positives >= by(Policy::Sbf).count.false_positives);
    assert!(by(Policy::Sbf).count.false_positives >= by(Policy::IbfMc).count.false_positives);
    assert!(by(Policy::Sbf).count.false_positives >= by(Policy::Ibf2c).count.false_positives);
    assert!(by(Policy::Sbf).count.false_negatives <= by(Policy::IbfMc).count.false_negatives);
    let table = experiment::format_table(std::slice::from_ref(&result));
    assert!(table.contains("IBF-MC"));
}
