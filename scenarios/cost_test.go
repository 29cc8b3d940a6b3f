package scenarios

import (
	"strings"
	"testing"
)

// TestExamplePrices: the embedded catalog loads, is labelled as example
// prices, and every figure has a source.
func TestExamplePrices(t *testing.T) {
	c, err := ExamplePrices()
	if err != nil {
		t.Fatal(err)
	}
	if !c.Example || !strings.Contains(c.Label(), ExampleNotice) || !strings.Contains(c.Title, "EXAMPLE") || c.Date == "" {
		t.Errorf("label %q, title %q, date %q", c.Label(), c.Title, c.Date)
	}
	for _, term := range c.Terms(nil) {
		if strings.TrimSpace(term.Source) == "" || strings.HasPrefix(term.Source, ExamplePricesName) {
			t.Errorf("%s has no source: %q", term.Name, term.Source)
		}
	}
}

func TestLoadPricesErrors(t *testing.T) {
	tests := []struct{ doc, want string }{
		{"gpu: {H900: 1}\n", "p.yaml:1:7: gpu: unknown GPU \"H900\""},
		{"nic: {ib-999G: 1}\n", "p.yaml:1:7: nic: unknown ib NIC speed"},
		{"nic: {ib-NDR: 1, ib-400G: 2}\n", "p.yaml:1:18: nic: \"ib-400G\" is given twice"},
		{"gpu: {B200: -5}\n", "p.yaml:1:13: gpu.B200: -5 is below 0"},
		{"gpu: {B200: {usd: 1, kw: 2}}\n", "p.yaml:1:22: gpu.B200: more than one value"},
		{"gpu: {B200: {source: x}}\n", "p.yaml:1:13: gpu.B200: missing the value"},
		{"server: {dgx-z: 1}\n", "p.yaml:1:10: server: unknown node template"},
		{"power: {usd_per_kwh: 0.1, years: 3}\n", "missing key \"kw_per_node\""},
		{"switch_radix: 1\n", "p.yaml:1:15: switch_radix: 1 is below 2"},
		{"bogus: 1\n", "p.yaml:1:1: unknown key \"bogus\""},
	}
	for _, tc := range tests {
		_, err := LoadPrices("p.yaml", []byte(tc.doc))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want %q", tc.doc, err, tc.want)
		}
	}
}
