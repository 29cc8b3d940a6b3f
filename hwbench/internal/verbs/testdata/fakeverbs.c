/* A stand-in libibverbs for the binding's tests: one device with one port,
 * enough of the verbs to build an endpoint and register memory. It checks
 * and records the arguments of ibv_reg_dmabuf_mr and of the RTR transition.
 * Structures are laid out as rdma-core's verbs.h on LP64. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct fake_context { void *device; void *ops[40]; };
struct fake_qp { void *context, *qp_context, *pd, *send_cq, *recv_cq, *srq; uint32_t handle, qp_num; };
struct fake_mr { void *context, *pd, *addr; size_t length; uint32_t handle, lkey, rkey; };

static char devname[] = "mlx5_fake";
static void *devlist[2] = { devname, NULL };
void **ibv_get_device_list(int *n) { *n = 1; return devlist; }
void ibv_free_device_list(void **l) { (void)l; }
const char *ibv_get_device_name(void *d) { return (const char *)d; }
static struct fake_context ctx;
void *ibv_open_device(void *d) { ctx.device = d; return &ctx; }
int ibv_close_device(void *c) { (void)c; return 0; }
int ibv_query_device(void *c, void *a) { (void)c; memset(a, 0, 232); return 0; }
int ibv_query_port(void *c, uint8_t p, void *a) { (void)c; (void)p; memset(a, 0, 48); return 0; }
int ibv_query_gid(void *c, uint8_t p, int i, void *g) { (void)c; (void)p; (void)i; memset(g, 0, 16); return 0; }
static int pd_obj;
void *ibv_alloc_pd(void *c) { (void)c; return &pd_obj; }
int ibv_dealloc_pd(void *p) { (void)p; return 0; }
static struct fake_mr mr;
void *ibv_reg_mr(void *pd, void *addr, size_t len, int access) { (void)access; mr.pd = pd; mr.addr = addr; mr.length = len; mr.lkey = 11; mr.rkey = 12; return &mr; }
int ibv_dereg_mr(void *m) { (void)m; return 0; }
static int cq_obj;
void *ibv_create_cq(void *c, int cqe, void *cc, void *ch, int v) { (void)c; (void)cqe; (void)cc; (void)ch; (void)v; return &cq_obj; }
int ibv_destroy_cq(void *c) { (void)c; return 0; }
static struct fake_qp qps[16]; static int nqp;
void *ibv_create_qp(void *pd, void *attr) { (void)attr; struct fake_qp *q = &qps[nqp % 16]; q->context = &ctx; q->pd = pd; q->qp_num = 0x100 + nqp++; return q; }
int ibv_destroy_qp(void *q) { (void)q; return 0; }
/* struct ibv_qp_attr: qp_state at 0, path_mtu at 8, qkey, rq_psn, sq_psn, then dest_qp_num at 28. */
int rtr_count; uint32_t rtr_dest[16]; int rtr_mtu;
int ibv_modify_qp(void *q, void *attr, int mask) {
	(void)mask;
	int state = *(int *)attr;
	if (state == 2) { /* RTR */
		rtr_dest[rtr_count % 16] = *(uint32_t *)((char *)attr + 28);
		rtr_mtu = *(int *)((char *)attr + 8);
		rtr_count++;
	}
	(void)q;
	return 0;
}
/* ibv_reg_dmabuf_mr(pd, offset, length, iova, fd, access) */
uint64_t dm_offset, dm_iova; size_t dm_length; int dm_fd, dm_access;
void *ibv_reg_dmabuf_mr(void *pd, uint64_t offset, size_t length, uint64_t iova, int fd, int access) {
	dm_offset = offset; dm_length = length; dm_iova = iova; dm_fd = fd; dm_access = access;
	mr.pd = pd; mr.addr = (void *)(uintptr_t)iova; mr.length = length; mr.lkey = 21; mr.rkey = 22;
	return &mr;
}
