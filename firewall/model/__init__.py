"""The chain's types and what they are made of: records, origin labels, states, ids, durations,
content hashing, clocks, errors and the text helpers every layer shares. Uses nothing above it."""
