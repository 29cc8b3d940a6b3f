// Package verbs binds the few libibverbs functions hwbench uses, loaded at
// run time from libibverbs.so.1 (no rdma-core headers at build time).
//
// The cgo preamble declares only the structures the binding allocates or
// reads, field for field as rdma-core's <infiniband/verbs.h> lays them out
// (an ABI stable since libibverbs 1.1). Three functions need care:
//
//   - ibv_query_port is an inline wrapper in verbs.h (___ibv_query_port)
//     around the provider's query_port; the library still exports
//     "ibv_query_port" (symbol version IBVERBS_1.1) taking the older, shorter
//     struct _compat_ibv_port_attr (no port_cap_flags2, no active_speed_ex).
//     dlsym returns that default version, and the binding declares the
//     compat layout and passes a larger zeroed buffer, so it is safe on old
//     and new rdma-core alike. XDR (active_speed 256) does not fit the compat
//     field; hwbench reads the rate from sysfs as well.
//   - ibv_post_send and ibv_poll_cq are inline functions that call through
//     the provider's table in struct ibv_context (ops.post_send, index 25;
//     ops.poll_cq, index 11). The binding calls through the same pointers.
//   - ibv_reg_mr is a macro around __ibv_reg_mr in new headers; the exported
//     ibv_reg_mr symbol is the plain four-argument function, which is what
//     the macro calls when no optional access flags are used.
//
// Built without cgo or for a system other than Linux, Load returns an error
// wrapping dl.ErrUnsupported.
package verbs
