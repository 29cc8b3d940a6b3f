package model

import (
	"errors"
	"strings"
)

// SourceKind says what a model value rests on.
type SourceKind uint8

const (
	// SourceNone is the zero value: no source given. It never passes Check.
	SourceNone SourceKind = iota
	// SourceCited is a public figure: a measurement, a vendor document, a
	// paper or a constant in NCCL's source.
	SourceCited
	// SourceAssumption is a value collsim assumes, with its reasoning.
	SourceAssumption
)

// Source is where a model value comes from. Build one with Cite or Assume;
// the zero value is "no source" and fails Check.
type Source struct {
	Kind SourceKind
	// Ref names where the figure is published (an NCCL source file, an
	// issue, a paper, a vendor document, a case of the measurement data);
	// empty for an assumption.
	Ref string
	// Says is what the cited figure says, or an assumption's reasoning.
	Says string
}

// Cite is a public figure: where it is published and what it says.
func Cite(ref, says string) Source { return Source{Kind: SourceCited, Ref: ref, Says: says} }

// Assume is an assumption and the reasoning behind it.
func Assume(reasoning string) Source { return Source{Kind: SourceAssumption, Says: reasoning} }

// Check reports a missing or incomplete source: a citation needs both where
// and what, an assumption its reasoning.
func (s Source) Check() error {
	switch s.Kind {
	case SourceCited:
		if strings.TrimSpace(s.Ref) == "" || strings.TrimSpace(s.Says) == "" {
			return errors.New("citation without a reference or without what it says")
		}
	case SourceAssumption:
		if strings.TrimSpace(s.Says) == "" {
			return errors.New("assumption without its reasoning")
		}
	default:
		return errors.New("no source")
	}
	return nil
}

// String is the source as reports print it: "what it says (where)" for a
// citation, "assumption: reasoning" for an assumption, "" for none.
func (s Source) String() string {
	switch s.Kind {
	case SourceCited:
		return s.Says + " (" + s.Ref + ")"
	case SourceAssumption:
		return "assumption: " + s.Says
	}
	return ""
}

// String is "cited", "assumption" or "none".
func (k SourceKind) String() string {
	switch k {
	case SourceCited:
		return "cited"
	case SourceAssumption:
		return "assumption"
	}
	return "none"
}
