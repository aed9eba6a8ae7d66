//! Command-line arguments of the probes in `bench/examples/`: positional
//! integers with a default, checked, and a one-line error with exit code 2
//! when one is not accepted.

/// The positional argument `position` (1-based, after the program name) as
/// an integer, or `default` when it is absent. A value that does not parse
/// or that `accept` refuses prints `program: the argument ... must be
/// {what}` on stderr and exits with code 2.
pub fn positional(program: &str, position: usize, default: usize, accept: impl Fn(usize) -> bool, what: &str) -> usize {
    match std::env::args().nth(position).map_or(Ok(default), |s| s.parse::<usize>()) {
        Ok(n) if accept(n) => n,
        _ => {
            eprintln!("{program}: argument {position} must be {what}");
            std::process::exit(2);
        }
    }
}
