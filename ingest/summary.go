package ingest

import (
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Free-text published statements (KindSummary): sections headed
// "=== owner/repo#123 (who, when; hardware) ===" with quoted text that
// mentions bandwidth figures such as "480GB/s" or "400Gbps". The parser
// recognises the file and lists the figures; it makes no measurement records.

var (
	reSection = regexp.MustCompile(`^===\s*(.+?)\s*===\s*$`)
	reIssue   = regexp.MustCompile(`\b[\w.-]+/[\w.-]+#\d+\b`)
	// A number followed by a rate unit. "GB/" alone (a typo seen in
	// DeepEP#13, "193GB/,") is read as GB/s.
	reFigure = regexp.MustCompile(`(?i)(\d+(?:\.\d+)?)\s*(GByte/s|GBytes/s|GB/s|GB/sec|Gbit/s|Gbits/s|Gb/s|Gb/sec|Gbps|GBps|TB/s|GB/)`)
)

func detectSummary(h *head) bool {
	sections := h.count(2, func(s string) bool { return reSection.MatchString(strings.TrimSpace(s)) })
	issues := h.count(2, func(s string) bool { return reIssue.MatchString(s) })
	figures := h.count(1, func(s string) bool { return reFigure.MatchString(s) })
	return figures > 0 && (sections > 0 || issues > 1)
}

// figureGBps converts a figure to GB/s (1e9 bytes/s): upper-case B is
// bytes, lower-case b bits.
func figureGBps(v float64, unit string) float64 {
	switch unit {
	case "TB/s":
		return v * 1000
	case "Gb/s", "Gb/sec", "Gbit/s", "Gbits/s", "Gbps", "gbps", "gb/s":
		return v / 8
	}
	return v
}

func parseSummary(name string, data []byte) (*Artifact, error) {
	sk := &skipper{}
	lines := collectLines(data, sk)
	a := &Artifact{Kind: KindSummary}
	section := ""
	for _, l := range lines {
		t := strings.TrimSpace(l.text)
		if m := reSection.FindStringSubmatch(t); m != nil {
			section = m[1]
			continue
		}
		for _, loc := range reFigure.FindAllStringSubmatchIndex(t, -1) {
			if len(a.Figures) >= maxListItems {
				break
			}
			v, err := strconv.ParseFloat(t[loc[2]:loc[3]], 64)
			if err != nil {
				continue
			}
			unit := t[loc[4]:loc[5]]
			if unit == "GB/" {
				unit = "GB/s"
			}
			lo, hi := max(loc[0]-60, 0), min(loc[1]+40, len(t))
			if lo > 0 {
				// start at a word
				if i := strings.IndexByte(t[lo:loc[0]], ' '); i >= 0 {
					lo += i + 1
				}
			}
			for lo > 0 && !utf8.RuneStart(t[lo]) {
				lo--
			}
			for hi < len(t) && !utf8.RuneStart(t[hi]) {
				hi++
			}
			a.Figures = append(a.Figures, Figure{Line: l.num, Value: v, Unit: unit, GBps: figureGBps(v, unit),
				Section: section, Context: strings.TrimSpace(t[lo:hi])})
		}
	}
	a.Skipped = sk.result()
	if len(a.Figures) == 0 {
		return nil, errNoData(name, 1, "free text without any bandwidth figure")
	}
	return a, nil
}
