package nccl

import "fmt"

// Sonames are the NCCL libraries Load tries.
var Sonames = []string{"libnccl.so.2"}

// UniqueIDBytes is NCCL_UNIQUE_ID_BYTES.
const UniqueIDBytes = 128

// UniqueID is an ncclUniqueId: what rank 0 creates and every rank passes to
// InitRank.
type UniqueID [UniqueIDBytes]byte

// Comm is an ncclComm_t handle.
type Comm uintptr

// DataType is ncclDataType_t.
type DataType int

// Data types (nccl.h, stable since NCCL 2.0; bfloat16 since 2.10).
const (
	Int8     DataType = 0
	Uint8    DataType = 1
	Int32    DataType = 2
	Uint32   DataType = 3
	Int64    DataType = 4
	Uint64   DataType = 5
	Float16  DataType = 6
	Float32  DataType = 7
	Float64  DataType = 8
	Bfloat16 DataType = 9
)

// RedOp is ncclRedOp_t.
type RedOp int

// Reduction operations (nccl.h; Avg since 2.10).
const (
	Sum  RedOp = 0
	Prod RedOp = 1
	Max  RedOp = 2
	Min  RedOp = 3
	Avg  RedOp = 4
)

// Error is a failed NCCL call.
type Error struct {
	// Op is the NCCL function, e.g. "ncclCommInitRank".
	Op string
	// Code is the ncclResult_t value.
	Code int
	// Msg is ncclGetErrorString(Code); Detail is ncclGetLastError when the
	// library has it and it says something.
	Msg, Detail string
}

func (e *Error) Error() string {
	s := fmt.Sprintf("nccl: %s: %s (ncclResult %d)", e.Op, e.Msg, e.Code)
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	return s
}

// VersionString decodes ncclGetVersion's code: major*10000+minor*100+patch
// from 2.9 on, major*1000+minor*100+patch before (nccl.h NCCL_VERSION).
// 22105 gives "2.21.5"; 0 gives "".
func VersionString(code int) string {
	switch {
	case code <= 0:
		return ""
	case code >= 10000:
		return fmt.Sprintf("%d.%d.%d", code/10000, (code%10000)/100, code%100)
	}
	return fmt.Sprintf("%d.%d.%d", code/1000, (code%1000)/100, code%100)
}
