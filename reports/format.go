package reports

import (
	"math"
	"strconv"
)

// fmtNum formats a value for a table cell: "n/a" for NaN, whole numbers at
// 1000 and above, two decimals from 1, three significant digits below.
func fmtNum(v float64) string {
	switch {
	case math.IsNaN(v):
		return "n/a"
	case math.IsInf(v, 1):
		return "inf"
	case math.IsInf(v, -1):
		return "-inf"
	case v == 0:
		return "0"
	case math.Abs(v) >= 1000:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case math.Abs(v) >= 1:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}

// fmtFixed formats v with prec decimals, "n/a" for NaN.
func fmtFixed(v float64, prec int) string {
	if math.IsNaN(v) {
		return "n/a"
	}
	return strconv.FormatFloat(v, 'f', prec, 64)
}

// fmtPercent formats a fraction as a percentage with one decimal: 0.934 is
// "93.4%".
func fmtPercent(frac float64) string {
	if math.IsNaN(frac) {
		return "n/a"
	}
	return strconv.FormatFloat(frac*100, 'f', 1, 64) + "%"
}

// fmtCell formats a heat-map value to fit in a small cell: three
// significant digits without an exponent for usual magnitudes.
func fmtCell(v float64) string {
	a := math.Abs(v)
	switch {
	case math.IsNaN(v):
		return "N/A"
	case a >= 100 || v == math.Trunc(v):
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
