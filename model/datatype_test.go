package model

import "testing"

// TestDatatypesNCCLTestsOrder: the canonical names are nccl-tests'
// test_typenames (src/common.cu), in ncclDataType_t order, with the sizes
// of the C types behind them.
func TestDatatypesNCCLTestsOrder(t *testing.T) {
	want := []struct {
		name string
		size int
	}{
		{"int8", 1}, {"uint8", 1}, {"int32", 4}, {"uint32", 4}, {"int64", 8}, {"uint64", 8},
		{"half", 2}, {"float", 4}, {"double", 8}, {"bfloat16", 2}, {"f8e4m3", 1}, {"f8e5m2", 1},
	}
	got := Datatypes()
	if len(got) != len(want) {
		t.Fatalf("%d datatypes, want %d", len(got), len(want))
	}
	for i, w := range want {
		if got[i].Name != w.name || got[i].Size != w.size {
			t.Errorf("datatype %d = %s/%d, want %s/%d", i, got[i].Name, got[i].Size, w.name, w.size)
		}
	}
}

// TestDatatypeSizeNames: every spelling the nccl-tests parser and predict
// --datatype accepted before the table was shared keeps its size, case is
// ignored, and nothing else is accepted.
func TestDatatypeSizeNames(t *testing.T) {
	known := map[string]int{
		"int8": 1, "char": 1, "uint8": 1, "f8e4m3": 1, "f8e5m2": 1, "fp8_e4m3": 1, "fp8_e5m2": 1,
		"half": 2, "float16": 2, "bfloat16": 2, "bf16": 2,
		"int32": 4, "int": 4, "uint32": 4, "float": 4, "float32": 4,
		"int64": 8, "uint64": 8, "double": 8, "float64": 8,
	}
	n := 0
	for _, d := range Datatypes() {
		n += 1 + len(d.Aliases)
	}
	if n != len(known) {
		t.Errorf("the table has %d spellings, want %d", n, len(known))
	}
	for name, size := range known {
		if got, ok := DatatypeSize(name); !ok || got != size {
			t.Errorf("DatatypeSize(%q) = %d, %v; want %d", name, got, ok, size)
		}
	}
	if got, ok := DatatypeSize("BFloat16"); !ok || got != 2 {
		t.Errorf("DatatypeSize(BFloat16) = %d, %v; want 2", got, ok)
	}
	for _, bad := range []string{"", "float8", "int16", "fp32"} {
		if _, ok := DatatypeSize(bad); ok {
			t.Errorf("DatatypeSize(%q) accepted", bad)
		}
	}
	d := Datatypes()
	d[0].Aliases[0] = "x"
	if _, ok := DatatypeSize("char"); !ok {
		t.Error("Datatypes returned the table itself")
	}
}
