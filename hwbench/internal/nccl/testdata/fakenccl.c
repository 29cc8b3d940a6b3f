/* A stand-in libnccl for the binding's tests: built with the system C
 * compiler during the test and loaded with dlopen. Each entry point records
 * the arguments it receives, in nccl.h's order, for the test to read back. */
#include <stdint.h>
#include <string.h>

typedef struct { char internal[128]; } ncclUniqueId;

int ncclGetVersion(int *v) { *v = 22105; return 0; }
int ncclGetUniqueId(ncclUniqueId *id) { memset(id->internal, 0x5a, sizeof id->internal); return 0; }
char seen_id[128]; int seen_nranks, seen_rank;
int ncclCommInitRank(void **comm, int nranks, ncclUniqueId id, int rank) {
	memcpy(seen_id, id.internal, sizeof seen_id);
	seen_nranks = nranks; seen_rank = rank;
	*comm = (void *)0xc0;
	return 0;
}
int ncclCommInitAll(void **comms, int n, const int *devs) { for (int i = 0; i < n; i++) comms[i] = (void *)(uintptr_t)(0xd0 + devs[i]); return 0; }
int destroyed, aborted;
int ncclCommDestroy(void *c) { (void)c; destroyed++; return 0; }
int ncclCommAbort(void *c) { aborted += c == (void *)0xc0; return 0; }
const char *ncclGetErrorString(int e) { (void)e; return "fake"; }
const char *ncclGetLastError(void *c) { (void)c; return ""; }
int ncclAllReduce(const void *s, void *r, size_t n, int dt, int op, void *c, void *st) { (void)s; (void)r; (void)n; (void)dt; (void)op; (void)c; (void)st; return 0; }
int ncclAllGather(const void *s, void *r, size_t n, int dt, void *c, void *st) { (void)s; (void)r; (void)n; (void)dt; (void)c; (void)st; return 0; }
int ncclReduceScatter(const void *s, void *r, size_t n, int dt, int op, void *c, void *st) { (void)s; (void)r; (void)n; (void)dt; (void)op; (void)c; (void)st; return 0; }
int ncclBroadcast(const void *s, void *r, size_t n, int dt, int root, void *c, void *st) { (void)s; (void)r; (void)n; (void)dt; (void)root; (void)c; (void)st; return 0; }
/* ncclReduce(sendbuff, recvbuff, count, datatype, op, root, comm, stream) */
uintptr_t red_send, red_recv, red_comm, red_stream; size_t red_count; int red_dt, red_op, red_root;
int ncclReduce(const void *s, void *r, size_t n, int dt, int op, int root, void *c, void *st) {
	red_send = (uintptr_t)s; red_recv = (uintptr_t)r; red_count = n; red_dt = dt; red_op = op; red_root = root;
	red_comm = (uintptr_t)c; red_stream = (uintptr_t)st;
	return 0;
}
/* ncclSend(sendbuff, count, datatype, peer, comm, stream), ncclRecv(recvbuff, ...) */
uintptr_t p2p_buf[2]; size_t p2p_count[2]; int p2p_dt[2], p2p_peer[2]; uintptr_t p2p_stream[2];
int ncclSend(const void *s, size_t n, int dt, int peer, void *c, void *st) {
	(void)c; p2p_buf[0] = (uintptr_t)s; p2p_count[0] = n; p2p_dt[0] = dt; p2p_peer[0] = peer; p2p_stream[0] = (uintptr_t)st; return 0;
}
int ncclRecv(void *r, size_t n, int dt, int peer, void *c, void *st) {
	(void)c; p2p_buf[1] = (uintptr_t)r; p2p_count[1] = n; p2p_dt[1] = dt; p2p_peer[1] = peer; p2p_stream[1] = (uintptr_t)st; return 0;
}
int ncclGroupStart(void) { return 0; }
int ncclGroupEnd(void) { return 0; }
