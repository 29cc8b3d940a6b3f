package model

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Bytes is a size in bytes.
type Bytes int64

// Binary size multiples, as nccl-tests reads K/M/G suffixes (1024-based).
const (
	KiB Bytes = 1 << 10
	MiB Bytes = 1 << 20
	GiB Bytes = 1 << 30
	TiB Bytes = 1 << 40
)

// GBps is a bandwidth in gigabytes per second with 1 GB = 1e9 bytes, the unit
// NCCL and nccl-tests use for algbw and busbw.
type GBps float64

// BytesPerPs returns the bandwidth in bytes per picosecond (1 GB/s = 1e-3 B/ps).
func (b GBps) BytesPerPs() float64 { return float64(b) * 1e-3 }

// Time is simulated time or a duration, as an integer count of picoseconds.
// An int64 holds about 106 days of simulated time.
type Time int64

// Time units.
const (
	Picosecond  Time = 1
	Nanosecond  Time = 1000
	Microsecond Time = 1000 * Nanosecond
	Millisecond Time = 1000 * Microsecond
	Second      Time = 1000 * Millisecond
)

// Microseconds returns t in microseconds.
func (t Time) Microseconds() float64 { return float64(t) / float64(Microsecond) }

// Seconds returns t in seconds.
func (t Time) Seconds() float64 { return float64(t) / float64(Second) }

// String prints t with a unit chosen for readability.
func (t Time) String() string {
	switch {
	case t < Nanosecond && t > -Nanosecond:
		return fmt.Sprintf("%dps", int64(t))
	case t < Microsecond && t > -Microsecond:
		return fmt.Sprintf("%.3gns", float64(t)/float64(Nanosecond))
	case t < Millisecond && t > -Millisecond:
		return fmt.Sprintf("%.4gus", t.Microseconds())
	case t < Second && t > -Second:
		return fmt.Sprintf("%.4gms", float64(t)/float64(Millisecond))
	}
	return fmt.Sprintf("%.4gs", t.Seconds())
}

// Micros converts a duration in microseconds to Time, rounding to the nearest
// picosecond.
func Micros(us float64) Time { return Time(math.Round(us * float64(Microsecond))) }

// TransferTime returns how long n bytes take at bandwidth bw, rounded up to a
// whole picosecond. It returns 0 for n <= 0 and panics if bw <= 0 (a caller bug:
// every link has a positive bandwidth once validated).
func TransferTime(n Bytes, bw GBps) Time {
	if n <= 0 {
		return 0
	}
	if bw <= 0 {
		panic("model: TransferTime with non-positive bandwidth")
	}
	return Time(math.Ceil(float64(n) / bw.BytesPerPs()))
}

// ParseBytes reads a size as nccl-tests does: a non-negative integer with an
// optional K, M, G or T suffix (1024-based, case-insensitive, an optional
// trailing "B" or "iB" accepted). "1M" is 1048576.
func ParseBytes(s string) (Bytes, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return 0, fmt.Errorf("empty size")
	}
	u := strings.ToUpper(t)
	if strings.HasSuffix(u, "IB") {
		u = strings.TrimSuffix(u, "IB")
	} else {
		u = strings.TrimSuffix(u, "B")
	}
	mult := Bytes(1)
	if n := len(u); n > 0 {
		switch u[n-1] {
		case 'K':
			mult, u = KiB, u[:n-1]
		case 'M':
			mult, u = MiB, u[:n-1]
		case 'G':
			mult, u = GiB, u[:n-1]
		case 'T':
			mult, u = TiB, u[:n-1]
		}
	}
	v, err := strconv.ParseInt(u, 10, 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("invalid size %q (want an integer with optional K/M/G/T suffix, e.g. 8, 64K, 1G)", s)
	}
	if v > math.MaxInt64/int64(mult) {
		return 0, fmt.Errorf("size %q overflows", s)
	}
	return Bytes(v) * mult, nil
}

// FormatBytes prints a size the short way nccl-tests users write it: exact
// binary multiples as 64K, 1M, 8G; anything else in bytes.
func FormatBytes(b Bytes) string {
	switch {
	case b >= TiB && b%TiB == 0:
		return fmt.Sprintf("%dT", b/TiB)
	case b >= GiB && b%GiB == 0:
		return fmt.Sprintf("%dG", b/GiB)
	case b >= MiB && b%MiB == 0:
		return fmt.Sprintf("%dM", b/MiB)
	case b >= KiB && b%KiB == 0:
		return fmt.Sprintf("%dK", b/KiB)
	}
	return fmt.Sprintf("%dB", int64(b))
}
