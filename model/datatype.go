package model

import "strings"

// Datatype is one NCCL element type: the name nccl-tests prints in the type
// column of its results table (and accepts for -d), its size in bytes, and
// the other spellings that name it.
type Datatype struct {
	// Name is the nccl-tests name ("float", "bfloat16").
	Name string
	// Size is the element size in bytes.
	Size int
	// Aliases are other accepted spellings, lower case.
	Aliases []string
}

// datatypes is the one datatype table. Names and order are nccl-tests'
// test_typenames (src/common.cu): int8, uint8, int32, uint32, int64, uint64,
// half, float, double, bfloat16, f8e4m3, f8e5m2, in ncclDataType_t order
// (NCCL src/nccl.h.in: ncclInt8 = 0 ... ncclFloat8e5m2 = 11). The aliases
// are the other names nccl.h gives the same enum value (ncclChar, ncclInt,
// ncclFloat16, ncclFloat32, ncclFloat64, spelled as nccl-tests spells the
// rest), plus "bf16", "fp8_e4m3" and "fp8_e5m2", spellings that JSON
// result writers use for the same types (assumption: accepted so such
// files parse; no size differs from the canonical name).
var datatypes = [...]Datatype{
	{Name: "int8", Size: 1, Aliases: []string{"char"}},
	{Name: "uint8", Size: 1},
	{Name: "int32", Size: 4, Aliases: []string{"int"}},
	{Name: "uint32", Size: 4},
	{Name: "int64", Size: 8},
	{Name: "uint64", Size: 8},
	{Name: "half", Size: 2, Aliases: []string{"float16"}},
	{Name: "float", Size: 4, Aliases: []string{"float32"}},
	{Name: "double", Size: 8, Aliases: []string{"float64"}},
	{Name: "bfloat16", Size: 2, Aliases: []string{"bf16"}},
	{Name: "f8e4m3", Size: 1, Aliases: []string{"fp8_e4m3"}},
	{Name: "f8e5m2", Size: 1, Aliases: []string{"fp8_e5m2"}},
}

// Datatypes returns the datatype table in ncclDataType_t order (a copy).
func Datatypes() []Datatype {
	out := make([]Datatype, len(datatypes))
	for i, d := range datatypes {
		d.Aliases = append([]string(nil), d.Aliases...)
		out[i] = d
	}
	return out
}

// LookupDatatype finds a datatype by its name or an alias, ignoring case.
func LookupDatatype(name string) (Datatype, bool) {
	n := strings.ToLower(name)
	for _, d := range datatypes {
		if d.Name == n {
			return d, true
		}
		for _, a := range d.Aliases {
			if a == n {
				return d, true
			}
		}
	}
	return Datatype{}, false
}

// DatatypeSize returns the element size in bytes of a datatype name or
// alias (case ignored); ok is false for an unknown name.
func DatatypeSize(name string) (size int, ok bool) {
	d, ok := LookupDatatype(name)
	return d.Size, ok
}
