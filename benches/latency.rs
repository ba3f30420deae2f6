//! Placeholder: the latency benchmark lands in a later commit.

fn main() {}
