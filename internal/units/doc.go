// Package units parses and formats the physical quantities that ckpt reads
// from its command line and YAML files: durations, sizes, bandwidths and
// event rates. Every parser returns a float64 in SI base units (seconds,
// bytes, bytes per second, events per second), never panics, and never
// returns NaN or ±Inf with a nil error. Range checks (for example "must be
// positive") are the caller's job, so a leading sign is accepted.
//
// # Numbers
//
// A number is written in plain decimal: digits with an optional fraction and
// an optional exponent ("300", "0.5", ".5", "1.5e3", "1.757e-5"), optionally
// preceded by "+" or "-". Hexadecimal, digit separators ("1_000"), "NaN" and
// "Inf" are rejected. Whitespace around the whole value is ignored, and
// spaces may separate a number from its unit ("5 m", "29 GB").
//
// # Durations (ParseDuration, result in seconds)
//
// A bare number is seconds. Units are case-sensitive and lowercase only:
//
//	ns          nanosecond
//	us, µs      microsecond (the micro sign or the Greek mu)
//	ms          millisecond
//	s           second
//	m, min      minute ("min" so that FormatDuration output parses back)
//	h           hour
//	d           day (86400 s)
//	w           week (7 d)
//	y           year, exactly 365 d; leap years are ignored on purpose so
//	            that "5y" is always 157680000 s
//
// Several number+unit parts may be concatenated, Go style, and are summed:
// "1h30m", "2d12h", "1h 30m". Every part needs a unit ("1h30" is an error)
// and only the whole value may carry a sign ("-1h30m" is -5400 s, "1h-30m" is
// an error).
//
// # Sizes (ParseSize, result in bytes)
//
// A bare number is bytes; fractions are allowed ("1.5TiB"). Units:
//
//	B
//	kB  MB  GB  TB  PB  EB      decimal: 1e3, 1e6, ... 1e18
//	KiB MiB GiB TiB PiB EiB     binary:  2^10, 2^20, ... 2^60
//
// The prefix of a size unit is matched case-insensitively (ASCII only), so
// "kB", "KB" and "gB" are accepted, but the final "B" must be uppercase: a
// lowercase "b" ("10Gb", "1kb") conventionally means bits, and reading it as
// bytes would be off by a factor of eight, so it is refused. Bare prefixes
// such as "5G" are rejected because they are ambiguous between decimal and
// binary.
//
// # Bandwidths (ParseBandwidth, result in bytes per second)
//
// A bare number is bytes per second. Otherwise write a size, a slash and a
// time unit: "400MB/s", "6.4 GB/sec", "1.5GiB/s", "1TB/h" (converted to per
// second). The time unit is any duration unit above or "sec". The suffix
// form "400MBps" is also accepted, but only with an uppercase "B": "Mbps"
// conventionally means megabits per second, so lowercase "bps" is rejected
// rather than silently misread by a factor of eight. A size without a time
// unit ("400MB") is an error.
//
// # Rates (ParseRate, result in events per second)
//
// A bare number is per second ("1.757e-5"). Otherwise write a number, a slash
// and a time unit: "3/s", "2/h", "0.1/d", "1/y".
//
// # Lists
//
// ParseList splits a comma-separated list ("30,400", "30s, 5m") and parses
// each element with the given parser; an error names the 1-based position of
// the bad element. Empty elements are errors.
//
// # Errors
//
// Parsers return a *SyntaxError whose message names the kind of quantity,
// the input and the reason, for example:
//
//	invalid duration "5x": unknown unit "x" (use ns, us, ms, s, m, h, d, w, y)
//
// # Formatting
//
// FormatDuration, FormatSize, FormatBandwidth and FormatRate produce short
// human-readable strings for tables with three significant digits and
// trailing zeros trimmed: "0.53 s", "14.2 min", "1.37 y", "40.8 TB",
// "6.4 GB/s", "1.76e-05 /s". Sizes use decimal units. NaN is shown as "NaN"
// and infinities as "inf" or "-inf". Except for that, the output of each
// Format function is accepted by the matching Parse function.
package units
