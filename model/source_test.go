package model

import "testing"

// TestSourceCheck: a source is a citation with where and what, or an
// assumption with its reasoning; anything else fails.
func TestSourceCheck(t *testing.T) {
	tests := []struct {
		s    Source
		ok   bool
		text string
	}{
		{Cite("nccl-tests#212", "370 of 450 GB/s"), true, "370 of 450 GB/s (nccl-tests#212)"},
		{Assume("no measurement; calibrate fits it"), true, "assumption: no measurement; calibrate fits it"},
		{Source{}, false, ""},
		{Cite("", "370 of 450 GB/s"), false, "370 of 450 GB/s ()"},
		{Cite("nccl-tests#212", " "), false, "  (nccl-tests#212)"},
		{Assume(""), false, "assumption: "},
		{Source{Kind: SourceAssumption + 1, Says: "x"}, false, ""},
	}
	for _, tc := range tests {
		if err := tc.s.Check(); (err == nil) != tc.ok {
			t.Errorf("%+v: Check() = %v, want ok %v", tc.s, err, tc.ok)
		}
		if got := tc.s.String(); got != tc.text {
			t.Errorf("%+v: String() = %q, want %q", tc.s, got, tc.text)
		}
	}
}
