package model

import "testing"

// TestArchIndex: NCCL's tuning columns by SM version (tuning.cc): Turing
// uses Volta's, Ada Ampere's.
func TestArchIndex(t *testing.T) {
	for sm, want := range map[int]int{60: ArchVolta, 70: ArchVolta, 75: ArchVolta, 80: ArchAmpere, 86: ArchAmpere, 89: ArchAmpere, 90: ArchHopper, 100: ArchBlackwell, 120: ArchBlackwell} {
		if got := ArchIndex(sm); got != want {
			t.Errorf("ArchIndex(%d) = %d, want %d", sm, got, want)
		}
	}
}

// TestProtocolGeometry: the buffer geometry nccl-facts §4.1 gives: the
// Simple ring chunk is 2 MiB in 2 slices, LL carries half its line,
// LL128 120 of 128 bytes and 576 000 B per step.
func TestProtocolGeometry(t *testing.T) {
	if got := RingChunkSteps * StepPayloadSimple; got != 2<<20 {
		t.Errorf("Simple ring chunk %d B, want 2 MiB", got)
	}
	if RingChunkSteps/RingSliceSteps != 2 {
		t.Errorf("%d slices per Simple chunk, want 2", RingChunkSteps/RingSliceSteps)
	}
	if StepPayload(ProtoLL128) != 576000 || StepPayload(ProtoLL) != 32<<10 {
		t.Errorf("step payloads LL %g, LL128 %g", StepPayload(ProtoLL), StepPayload(ProtoLL128))
	}
	if ProtoPayload(ProtoLL) != 0.5 || ProtoPayload(ProtoLL128) != 120.0/128 || ProtoPayload(ProtoSimple) != 1 {
		t.Error("protocol payload fractions")
	}
}
