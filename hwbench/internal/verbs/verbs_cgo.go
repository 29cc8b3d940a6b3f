//go:build cgo && linux

package verbs

/*
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

// Declarations below mirror <infiniband/verbs.h>; only what this file
// allocates or reads is declared, and every struct that is allocated here is
// declared in full so that its size matches.

union hb_gid {
	uint8_t raw[16];
	struct { uint64_t subnet_prefix, interface_id; } global;
};

// struct _compat_ibv_port_attr: what the exported ibv_query_port writes.
struct hb_port_attr {
	int state, max_mtu, active_mtu, gid_tbl_len;
	uint32_t port_cap_flags, max_msg_sz, bad_pkey_cntr, qkey_viol_cntr;
	uint16_t pkey_tbl_len, lid, sm_lid;
	uint8_t lmc, max_vl_num, sm_sl, subnet_timeout, init_type_reply;
	uint8_t active_width, active_speed, phys_state, link_layer, flags;
};

struct hb_device_attr {
	char fw_ver[64];
	uint64_t node_guid, sys_image_guid, max_mr_size, page_size_cap;
	uint32_t vendor_id, vendor_part_id, hw_ver;
	int max_qp, max_qp_wr;
	unsigned int device_cap_flags;
	int max_sge, max_sge_rd, max_cq, max_cqe, max_mr, max_pd;
	int max_qp_rd_atom, max_ee_rd_atom, max_res_rd_atom, max_qp_init_rd_atom, max_ee_init_rd_atom;
	int atomic_cap;
	int max_ee, max_rdd, max_mw, max_raw_ipv6_qp, max_raw_ethy_qp;
	int max_mcast_grp, max_mcast_qp_attach, max_total_mcast_qp_attach;
	int max_ah, max_fmr, max_map_per_fmr, max_srq, max_srq_wr, max_srq_sge;
	uint16_t max_pkeys;
	uint8_t local_ca_ack_delay, phys_port_cnt;
};

struct hb_wc {
	uint64_t wr_id;
	int status, opcode;
	uint32_t vendor_err, byte_len, imm_data, qp_num, src_qp;
	unsigned int wc_flags;
	uint16_t pkey_index, slid;
	uint8_t sl, dlid_path_bits;
};

struct hb_sge { uint64_t addr; uint32_t length, lkey; };

struct hb_mw_bind_info { void *mr; uint64_t addr, length; unsigned int mw_access_flags; };

struct hb_send_wr {
	uint64_t wr_id;
	struct hb_send_wr *next;
	struct hb_sge *sg_list;
	int num_sge;
	int opcode;
	unsigned int send_flags;
	uint32_t imm_data;
	union {
		struct { uint64_t remote_addr; uint32_t rkey; } rdma;
		struct { uint64_t remote_addr, compare_add, swap; uint32_t rkey; } atomic;
		struct { void *ah; uint32_t remote_qpn, remote_qkey; } ud;
	} wr;
	union { struct { uint32_t remote_srqn; } xrc; } qp_type;
	union {
		struct { void *mw; uint32_t rkey; struct hb_mw_bind_info bind_info; } bind_mw;
		struct { void *hdr; uint16_t hdr_sz, mss; } tso;
	};
};

// struct ibv_context up to the two provider entry points the inline
// ibv_poll_cq and ibv_post_send call: ops[11] and ops[25].
struct hb_context {
	void *device;
	void *ops_0_10[11];
	int (*poll_cq)(void *cq, int n, struct hb_wc *wc);
	void *ops_12_24[13];
	int (*post_send)(void *qp, struct hb_send_wr *wr, struct hb_send_wr **bad);
};

struct hb_cq { struct hb_context *context; };
struct hb_qp {
	struct hb_context *context;
	void *qp_context, *pd, *send_cq, *recv_cq, *srq;
	uint32_t handle, qp_num;
};
struct hb_mr {
	void *context, *pd, *addr;
	size_t length;
	uint32_t handle, lkey, rkey;
};

struct hb_qp_cap { uint32_t max_send_wr, max_recv_wr, max_send_sge, max_recv_sge, max_inline_data; };
struct hb_qp_init_attr {
	void *qp_context, *send_cq, *recv_cq, *srq;
	struct hb_qp_cap cap;
	int qp_type;
	int sq_sig_all;
};
struct hb_global_route { union hb_gid dgid; uint32_t flow_label; uint8_t sgid_index, hop_limit, traffic_class; };
struct hb_ah_attr {
	struct hb_global_route grh;
	uint16_t dlid;
	uint8_t sl, src_path_bits, static_rate, is_global, port_num;
};
struct hb_qp_attr {
	int qp_state, cur_qp_state, path_mtu, path_mig_state;
	uint32_t qkey, rq_psn, sq_psn, dest_qp_num;
	unsigned int qp_access_flags;
	struct hb_qp_cap cap;
	struct hb_ah_attr ah_attr, alt_ah_attr;
	uint16_t pkey_index, alt_pkey_index;
	uint8_t en_sqd_async_notify, sq_draining, max_rd_atomic, max_dest_rd_atomic, min_rnr_timer;
	uint8_t port_num, timeout, retry_cnt, rnr_retry, alt_port_num, alt_timeout;
	uint32_t rate_limit;
};

// Sizes of the rdma-core structures on LP64 (x86_64, aarch64, ppc64le), as
// the C compiler lays out verbs.h; a mismatch here means a declaration above
// drifted from the header.
#if UINTPTR_MAX == 0xffffffffffffffffu
_Static_assert(sizeof(struct hb_port_attr) == 48, "struct _compat_ibv_port_attr");
_Static_assert(sizeof(struct hb_device_attr) == 232, "struct ibv_device_attr");
_Static_assert(sizeof(struct hb_wc) == 48, "struct ibv_wc");
_Static_assert(sizeof(struct hb_sge) == 16, "struct ibv_sge");
_Static_assert(sizeof(struct hb_send_wr) == 128, "struct ibv_send_wr");
_Static_assert(sizeof(struct hb_ah_attr) == 32, "struct ibv_ah_attr");
_Static_assert(sizeof(struct hb_qp_attr) == 144, "struct ibv_qp_attr");
_Static_assert(sizeof(struct hb_qp_init_attr) == 64, "struct ibv_qp_init_attr");
_Static_assert(offsetof(struct hb_context, poll_cq) == 8 + 11 * sizeof(void *), "ibv_context.ops.poll_cq");
_Static_assert(offsetof(struct hb_context, post_send) == 8 + 25 * sizeof(void *), "ibv_context.ops.post_send");
_Static_assert(offsetof(struct hb_qp, qp_num) == 52, "ibv_qp.qp_num");
_Static_assert(offsetof(struct hb_mr, lkey) == 36, "ibv_mr.lkey");
#endif

typedef struct {
	void **(*get_device_list)(int *);
	void (*free_device_list)(void **);
	const char *(*get_device_name)(void *);
	void *(*open_device)(void *);
	int (*close_device)(void *);
	int (*query_device)(void *, struct hb_device_attr *);
	int (*query_port)(void *, uint8_t, struct hb_port_attr *);
	int (*query_gid)(void *, uint8_t, int, union hb_gid *);
	void *(*alloc_pd)(void *);
	int (*dealloc_pd)(void *);
	void *(*reg_mr)(void *, void *, size_t, int);
	int (*dereg_mr)(void *);
	void *(*create_cq)(void *, int, void *, void *, int);
	int (*destroy_cq)(void *);
	void *(*create_qp)(void *, struct hb_qp_init_attr *);
	int (*modify_qp)(void *, struct hb_qp_attr *, int);
	int (*destroy_qp)(void *);
	// ibv_reg_dmabuf_mr(pd, offset, length, iova, fd, access): rdma-core
	// v34+ (IBVERBS_1.12); NULL when the library predates it.
	void *(*reg_dmabuf_mr)(void *, uint64_t, size_t, uint64_t, int, int);
} hb_verbs;

#define P(x) ((void *)(uintptr_t)(x))

enum {
	HB_ACCESS = 1 | 2 | 4, // LOCAL_WRITE | REMOTE_WRITE | REMOTE_READ
	HB_QPT_RC = 2,
	HB_QPS_INIT = 1, HB_QPS_RTR = 2, HB_QPS_RTS = 3,
	HB_WR_RDMA_WRITE = 0,
	HB_SEND_SIGNALED = 2,
	HB_CQE = 1024,
	HB_MAX_SEND_WR = 512,
};

static void seterr(char *err, size_t n, const char *what) {
	snprintf(err, n, "%s: %s", what, strerror(errno ? errno : EIO));
}

// Device list.
static int hb_device_list(hb_verbs *f, uintptr_t *list) {
	int n = 0;
	errno = 0;
	void **l = f->get_device_list(&n);
	*list = (uintptr_t)l;
	return l == NULL ? -1 : n;
}
static void hb_free_device_list(hb_verbs *f, uintptr_t list) { f->free_device_list((void **)P(list)); }
static uintptr_t hb_device_at(uintptr_t list, int i) { return (uintptr_t)((void **)P(list))[i]; }
static const char *hb_device_name(hb_verbs *f, uintptr_t dev) { return f->get_device_name(P(dev)); }
static uintptr_t hb_open(hb_verbs *f, uintptr_t dev) { errno = 0; return (uintptr_t)f->open_device(P(dev)); }
static int hb_close(hb_verbs *f, uintptr_t ctx) { return f->close_device(P(ctx)); }
static int hb_query_device(hb_verbs *f, uintptr_t ctx, struct hb_device_attr *a) {
	memset(a, 0, sizeof *a);
	return f->query_device(P(ctx), a);
}
// hb_query_port passes a buffer larger than the compat struct (zeroed) so
// that a library writing a longer struct would still stay in bounds.
static int hb_query_port(hb_verbs *f, uintptr_t ctx, int port, struct hb_port_attr *out) {
	union { struct hb_port_attr a; char pad[256]; } buf;
	memset(&buf, 0, sizeof buf);
	int e = f->query_port(P(ctx), (uint8_t)port, &buf.a);
	*out = buf.a;
	return e;
}
static int hb_query_gid(hb_verbs *f, uintptr_t ctx, int port, int idx, uint8_t *out) {
	union hb_gid g;
	memset(&g, 0, sizeof g);
	int e = f->query_gid(P(ctx), (uint8_t)port, idx, &g);
	memcpy(out, g.raw, 16);
	return e;
}

// An endpoint: one PD, one CQ and nqp RC QPs on one port. A loopback pair
// is an endpoint of two QPs connected to each other; a remote endpoint's
// QPs connect to another node's.
#define HB_MAX_QP 16
typedef struct {
	void *pd, *cq, *qp[HB_MAX_QP];
	uint32_t qpn[HB_MAX_QP];
	int nqp;
} hb_lb;

static int modify(hb_verbs *f, void *qp, struct hb_qp_attr *a, int mask, char *err, size_t n, const char *what) {
	errno = 0;
	int e = f->modify_qp(qp, a, mask);
	if (e) { errno = e > 0 ? e : errno; seterr(err, n, what); }
	return e;
}

static void hb_lb_destroy(hb_verbs *f, hb_lb *lb) {
	for (int i = 0; i < HB_MAX_QP; i++) if (lb->qp[i]) { f->destroy_qp(lb->qp[i]); lb->qp[i] = NULL; }
	if (lb->cq) { f->destroy_cq(lb->cq); lb->cq = NULL; }
	if (lb->pd) { f->dealloc_pd(lb->pd); lb->pd = NULL; }
}

// hb_ep_create makes the PD, the CQ and nqp QPs in state INIT on port.
static int hb_ep_create(hb_verbs *f, uintptr_t ctx, int port, int nqp, hb_lb *lb, char *err, size_t n) {
	memset(lb, 0, sizeof *lb);
	if (nqp < 1 || nqp > HB_MAX_QP) { snprintf(err, n, "%d queue pairs (1..%d)", nqp, HB_MAX_QP); return -1; }
	lb->nqp = nqp;
	errno = 0;
	lb->pd = f->alloc_pd(P(ctx));
	if (!lb->pd) { seterr(err, n, "ibv_alloc_pd"); return -1; }
	errno = 0;
	lb->cq = f->create_cq(P(ctx), HB_CQE, NULL, NULL, 0);
	if (!lb->cq) { seterr(err, n, "ibv_create_cq"); hb_lb_destroy(f, lb); return -1; }
	for (int i = 0; i < nqp; i++) {
		struct hb_qp_init_attr ia;
		memset(&ia, 0, sizeof ia);
		ia.send_cq = lb->cq;
		ia.recv_cq = lb->cq;
		ia.cap.max_send_wr = HB_MAX_SEND_WR;
		ia.cap.max_recv_wr = 1;
		ia.cap.max_send_sge = 1;
		ia.cap.max_recv_sge = 1;
		ia.qp_type = HB_QPT_RC;
		errno = 0;
		lb->qp[i] = f->create_qp(lb->pd, &ia);
		if (!lb->qp[i]) { seterr(err, n, "ibv_create_qp"); hb_lb_destroy(f, lb); return -1; }
		lb->qpn[i] = ((struct hb_qp *)lb->qp[i])->qp_num;
		struct hb_qp_attr a;
		memset(&a, 0, sizeof a);
		a.qp_state = HB_QPS_INIT;
		a.pkey_index = 0;
		a.port_num = (uint8_t)port;
		a.qp_access_flags = HB_ACCESS;
		// IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS
		if (modify(f, lb->qp[i], &a, 1 | 16 | 32 | 8, err, n, "ibv_modify_qp(INIT)")) { hb_lb_destroy(f, lb); return -1; }
	}
	return 0;
}

// hb_ep_connect moves QP i to RTR towards remote_qpn at lid (InfiniBand)
// or gid (RoCE, use_gid), then to RTS.
static int hb_ep_connect(hb_verbs *f, hb_lb *lb, int i, int port, uint32_t remote_qpn, int use_gid, int gid_index,
                         const uint8_t *gid, int lid, int mtu, char *err, size_t n) {
	struct hb_qp_attr a;
	memset(&a, 0, sizeof a);
	a.qp_state = HB_QPS_RTR;
	a.path_mtu = mtu;
	a.dest_qp_num = remote_qpn;
	a.rq_psn = 0;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	a.ah_attr.port_num = (uint8_t)port;
	a.ah_attr.dlid = (uint16_t)lid;
	if (use_gid) {
		a.ah_attr.is_global = 1;
		memcpy(a.ah_attr.grh.dgid.raw, gid, 16);
		a.ah_attr.grh.sgid_index = (uint8_t)gid_index;
		a.ah_attr.grh.hop_limit = 64;
	}
	// STATE | AV | PATH_MTU | DEST_QPN | RQ_PSN | MAX_DEST_RD_ATOMIC | MIN_RNR_TIMER
	int mask = 1 | (1 << 7) | (1 << 8) | (1 << 20) | (1 << 12) | (1 << 17) | (1 << 15);
	if (modify(f, lb->qp[i], &a, mask, err, n, "ibv_modify_qp(RTR)")) return -1;
	memset(&a, 0, sizeof a);
	a.qp_state = HB_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.sq_psn = 0;
	a.max_rd_atomic = 1;
	// STATE | TIMEOUT | RETRY_CNT | RNR_RETRY | SQ_PSN | MAX_QP_RD_ATOMIC
	mask = 1 | (1 << 9) | (1 << 10) | (1 << 11) | (1 << 16) | (1 << 13);
	return modify(f, lb->qp[i], &a, mask, err, n, "ibv_modify_qp(RTS)");
}

static int hb_lb_create(hb_verbs *f, uintptr_t ctx, int port, int use_gid, int gid_index, const uint8_t *gid,
                        int lid, int mtu, hb_lb *lb, char *err, size_t n) {
	if (hb_ep_create(f, ctx, port, 2, lb, err, n)) return -1;
	for (int i = 0; i < 2; i++) {
		if (hb_ep_connect(f, lb, i, port, lb->qpn[1 - i], use_gid, gid_index, gid, lid, mtu, err, n)) {
			hb_lb_destroy(f, lb);
			return -1;
		}
	}
	return 0;
}
static uint32_t hb_ep_qpn(hb_lb *lb, int i) { return lb->qpn[i]; }

static uintptr_t hb_reg_mr(hb_verbs *f, hb_lb *lb, uintptr_t addr, size_t len, uint32_t *lkey, uint32_t *rkey, char *err, size_t n) {
	errno = 0;
	struct hb_mr *mr = f->reg_mr(lb->pd, P(addr), len, HB_ACCESS);
	if (!mr) { seterr(err, n, "ibv_reg_mr"); return 0; }
	*lkey = mr->lkey;
	*rkey = mr->rkey;
	return (uintptr_t)mr;
}
static int hb_dereg_mr(hb_verbs *f, uintptr_t mr) { return f->dereg_mr(P(mr)); }

// hb_reg_dmabuf_mr registers len bytes at offset off of the DMA-BUF fd,
// addressed by RDMA at iova.
static uintptr_t hb_reg_dmabuf_mr(hb_verbs *f, hb_lb *lb, uint64_t off, size_t len, uint64_t iova, int fd,
                                  uint32_t *lkey, uint32_t *rkey, char *err, size_t n) {
	errno = 0;
	struct hb_mr *mr = f->reg_dmabuf_mr(lb->pd, off, len, iova, fd, HB_ACCESS);
	if (!mr) { seterr(err, n, "ibv_reg_dmabuf_mr"); return 0; }
	*lkey = mr->lkey;
	*rkey = mr->rkey;
	return (uintptr_t)mr;
}

static int64_t now_ns(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int post_write(hb_lb *lb, int q, uint64_t id, uint64_t laddr, uint32_t lkey, uint64_t raddr, uint32_t rkey, uint32_t size) {
	struct hb_sge sge = { laddr, size, lkey };
	struct hb_send_wr wr, *bad = NULL;
	memset(&wr, 0, sizeof wr);
	wr.wr_id = id;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = HB_WR_RDMA_WRITE;
	wr.send_flags = HB_SEND_SIGNALED;
	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	struct hb_qp *qp = lb->qp[q];
	return qp->context->post_send(qp, &wr, &bad);
}

// poll reaps up to 16 completions; it returns how many, or -1 with err set
// on a failed completion.
static int hb_poll(hb_lb *lb, char *err, size_t n) {
	struct hb_wc wc[16];
	struct hb_cq *cq = lb->cq;
	int k = cq->context->poll_cq(cq, 16, wc);
	if (k < 0) { snprintf(err, n, "ibv_poll_cq failed (%d)", k); return -1; }
	for (int i = 0; i < k; i++) {
		if (wc[i].status != 0) {
			snprintf(err, n, "RDMA WRITE completion status %d (vendor error 0x%x)", wc[i].status, wc[i].vendor_err);
			return -1;
		}
	}
	return k;
}

// hb_write_bw keeps up to depth signalled RDMA WRITEs of size bytes in
// flight, spread round robin over QPs 0..nsend-1, until iters have
// completed, and returns the time from the first post to the last
// completion in *ns.
static int hb_write_bw(hb_lb *lb, int nsend, uint64_t laddr, uint32_t lkey, uint64_t raddr, uint32_t rkey, uint32_t size,
                       long iters, int depth, int64_t *ns, char *err, size_t n) {
	long posted = 0, done = 0;
	int64_t t0 = now_ns();
	while (done < iters) {
		while (posted < iters && posted - done < depth) {
			int e = post_write(lb, (int)(posted % nsend), (uint64_t)posted, laddr, lkey, raddr, rkey, size);
			if (e) { errno = e; seterr(err, n, "ibv_post_send"); return -1; }
			posted++;
		}
		int k = hb_poll(lb, err, n);
		if (k < 0) return -1;
		done += k;
	}
	*ns = now_ns() - t0;
	return 0;
}

// hb_write_lat posts one signalled RDMA WRITE at a time and waits for its
// completion, iters times; *ns is the total.
static int hb_write_lat(hb_lb *lb, uint64_t laddr, uint32_t lkey, uint64_t raddr, uint32_t rkey, uint32_t size,
                        long iters, int64_t *ns, char *err, size_t n) {
	int64_t t0 = now_ns();
	for (long i = 0; i < iters; i++) {
		int e = post_write(lb, 0, (uint64_t)i, laddr, lkey, raddr, rkey, size);
		if (e) { errno = e; seterr(err, n, "ibv_post_send"); return -1; }
		int k;
		do { k = hb_poll(lb, err, n); } while (k == 0);
		if (k < 0) return -1;
	}
	*ns = now_ns() - t0;
	return 0;
}
*/
import "C"

import (
	"fmt"
	"time"
	"unsafe"

	"github.com/collsim/collsim/hwbench/internal/dl"
)

// Lib is a loaded libibverbs. It is safe for concurrent use; the objects it
// opens are not.
type Lib struct {
	lib *dl.Library
	f   *C.hb_verbs
}

var symbols = append(dl.Syms(
	"ibv_get_device_list", "ibv_free_device_list", "ibv_get_device_name",
	"ibv_open_device", "ibv_close_device", "ibv_query_device",
	"ibv_query_port", // the exported compat symbol; see the package comment
	"ibv_query_gid", "ibv_alloc_pd", "ibv_dealloc_pd", "ibv_reg_mr", "ibv_dereg_mr",
	"ibv_create_cq", "ibv_destroy_cq", "ibv_create_qp", "ibv_modify_qp", "ibv_destroy_qp",
), dl.Sym{Name: "ibv_reg_dmabuf_mr", Optional: true})

// Load opens libibverbs.so.1. A missing library is an error wrapping
// dl.ErrLibraryNotFound.
func Load() (*Lib, error) { return LoadFrom(Sonames) }

// LoadFrom is Load with an explicit list of sonames or paths.
func LoadFrom(sonames []string) (*Lib, error) {
	lib, err := dl.Open(sonames, symbols)
	if err != nil {
		return nil, err
	}
	f := (*C.hb_verbs)(C.calloc(1, C.sizeof_hb_verbs))
	a := func(n string) *[0]byte { return (*[0]byte)(lib.Addr(n)) }
	f.get_device_list = a("ibv_get_device_list")
	f.free_device_list = a("ibv_free_device_list")
	f.get_device_name = a("ibv_get_device_name")
	f.open_device = a("ibv_open_device")
	f.close_device = a("ibv_close_device")
	f.query_device = a("ibv_query_device")
	f.query_port = a("ibv_query_port")
	f.query_gid = a("ibv_query_gid")
	f.alloc_pd = a("ibv_alloc_pd")
	f.dealloc_pd = a("ibv_dealloc_pd")
	f.reg_mr = a("ibv_reg_mr")
	f.dereg_mr = a("ibv_dereg_mr")
	f.create_cq = a("ibv_create_cq")
	f.destroy_cq = a("ibv_destroy_cq")
	f.create_qp = a("ibv_create_qp")
	f.modify_qp = a("ibv_modify_qp")
	f.destroy_qp = a("ibv_destroy_qp")
	f.reg_dmabuf_mr = a("ibv_reg_dmabuf_mr")
	return &Lib{lib: lib, f: f}, nil
}

// Soname returns the library that was loaded.
func (l *Lib) Soname() string { return l.lib.Soname() }

const errLen = 256

func cerr(buf []C.char) string { return C.GoString(&buf[0]) }

// Context is an open RDMA device.
type Context struct {
	l    *Lib
	ctx  C.uintptr_t
	name string
}

// withDevice finds name in the device list and calls fn with its handle.
func (l *Lib) withDevices(fn func(list C.uintptr_t, n int) error) error {
	var list C.uintptr_t
	n := int(C.hb_device_list(l.f, &list))
	if n < 0 {
		return &Error{Op: "ibv_get_device_list", Msg: "failed (is the ib_uverbs module loaded?)"}
	}
	defer C.hb_free_device_list(l.f, list)
	return fn(list, n)
}

// Devices lists every RDMA device with its ports and non-zero GIDs.
func (l *Lib) Devices() ([]Device, error) {
	var out []Device
	err := l.withDevices(func(list C.uintptr_t, n int) error {
		for i := 0; i < n; i++ {
			dev := C.hb_device_at(list, C.int(i))
			name := C.GoString(C.hb_device_name(l.f, dev))
			c := C.hb_open(l.f, dev)
			if c == 0 {
				return &Error{Op: "ibv_open_device", Msg: name + ": cannot open"}
			}
			d, err := l.describe(c, name)
			C.hb_close(l.f, c)
			if err != nil {
				return err
			}
			out = append(out, d)
		}
		return nil
	})
	return out, err
}

func (l *Lib) describe(c C.uintptr_t, name string) (Device, error) {
	d := Device{Name: name}
	var a C.struct_hb_device_attr
	if C.hb_query_device(l.f, c, &a) != 0 {
		return d, &Error{Op: "ibv_query_device", Msg: name + ": failed"}
	}
	d.FirmwareVersion = C.GoString(&a.fw_ver[0])
	g := uint64(a.node_guid)
	// node_guid is big-endian on the wire; print it as ibv_devinfo does.
	var b [8]byte
	*(*uint64)(unsafe.Pointer(&b[0])) = g
	d.NodeGUID = fmt.Sprintf("%02x%02x:%02x%02x:%02x%02x:%02x%02x", b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7])
	d.VendorID, d.PartID = uint32(a.vendor_id), uint32(a.vendor_part_id)
	for p := 1; p <= int(a.phys_port_cnt); p++ {
		var pa C.struct_hb_port_attr
		if C.hb_query_port(l.f, c, C.int(p), &pa) != 0 {
			return d, &Error{Op: "ibv_query_port", Msg: fmt.Sprintf("%s port %d: failed", name, p)}
		}
		port := Port{
			Num: p, State: int(pa.state), PhysState: int(pa.phys_state), LinkLayer: int(pa.link_layer),
			ActiveMTU: int(pa.active_mtu), MaxMTU: int(pa.max_mtu), Width: int(pa.active_width),
			Speed: int(pa.active_speed), LID: int(pa.lid), GIDTableLen: int(pa.gid_tbl_len),
			GIDs: map[int]GID{},
		}
		for i := 0; i < port.GIDTableLen && i < 256; i++ {
			var gid GID
			if C.hb_query_gid(l.f, c, C.int(p), C.int(i), (*C.uint8_t)(unsafe.Pointer(&gid[0]))) != 0 {
				continue
			}
			if !gid.IsZero() {
				port.GIDs[i] = gid
			}
		}
		d.Ports = append(d.Ports, port)
	}
	return d, nil
}

// Open opens the device called name.
func (l *Lib) Open(name string) (*Context, error) {
	var ctx C.uintptr_t
	err := l.withDevices(func(list C.uintptr_t, n int) error {
		for i := 0; i < n; i++ {
			dev := C.hb_device_at(list, C.int(i))
			if C.GoString(C.hb_device_name(l.f, dev)) != name {
				continue
			}
			if ctx = C.hb_open(l.f, dev); ctx == 0 {
				return &Error{Op: "ibv_open_device", Msg: name + ": cannot open"}
			}
			return nil
		}
		return &Error{Op: "ibv_open_device", Msg: fmt.Sprintf("no RDMA device %q", name)}
	})
	if err != nil {
		return nil, err
	}
	return &Context{l: l, ctx: ctx, name: name}, nil
}

// Close closes the device.
func (c *Context) Close() error {
	if c.ctx == 0 {
		return nil
	}
	if C.hb_close(c.l.f, c.ctx) != 0 {
		return &Error{Op: "ibv_close_device", Msg: c.name + ": failed"}
	}
	c.ctx = 0
	return nil
}

// Route says how the two loopback QPs address each other: by LID on
// InfiniBand, by GID (RoCE) when UseGID is set.
type Route struct {
	Port     int
	LID      int
	UseGID   bool
	GIDIndex int
	GID      GID
	// MTU is an ibv_mtu value (MTUEnum); usually the port's active MTU.
	MTU int
}

// Loopback is two RC queue pairs on one port connected to each other, with
// their protection domain and completion queue.
type Loopback struct {
	c  *Context
	lb *C.hb_lb
}

// Loopback creates and connects the queue pairs.
func (c *Context) Loopback(r Route) (*Loopback, error) {
	lb := (*C.hb_lb)(C.calloc(1, C.sizeof_hb_lb))
	buf := make([]C.char, errLen)
	useGID := C.int(0)
	if r.UseGID {
		useGID = 1
	}
	gid := r.GID
	if C.hb_lb_create(c.l.f, c.ctx, C.int(r.Port), useGID, C.int(r.GIDIndex), (*C.uint8_t)(unsafe.Pointer(&gid[0])),
		C.int(r.LID), C.int(r.MTU), lb, &buf[0], errLen) != 0 {
		C.free(unsafe.Pointer(lb))
		return nil, &Error{Op: "loopback", Msg: fmt.Sprintf("%s port %d: %s", c.name, r.Port, cerr(buf))}
	}
	return &Loopback{c: c, lb: lb}, nil
}

// Close destroys the queue pairs, completion queue and protection domain.
// Memory regions must be closed first.
func (lb *Loopback) Close() error {
	if lb.lb == nil {
		return nil
	}
	C.hb_lb_destroy(lb.c.l.f, lb.lb)
	C.free(unsafe.Pointer(lb.lb))
	lb.lb = nil
	return nil
}

// MR is a registered memory region.
type MR struct {
	lb         *Loopback
	mr         C.uintptr_t
	addr       uint64
	size       uint64
	lkey, rkey uint32
}

// Register registers n bytes at addr (host memory, or GPU memory when the
// GPUDirect RDMA kernel module is loaded) for local and remote access.
func (lb *Loopback) Register(addr, n uint64) (*MR, error) {
	buf := make([]C.char, errLen)
	var lkey, rkey C.uint32_t
	mr := C.hb_reg_mr(lb.c.l.f, lb.lb, C.uintptr_t(addr), C.size_t(n), &lkey, &rkey, &buf[0], errLen)
	if mr == 0 {
		return nil, &Error{Op: "ibv_reg_mr", Msg: fmt.Sprintf("%d bytes at %#x: %s", n, addr, cerr(buf))}
	}
	return &MR{lb: lb, mr: mr, addr: addr, size: n, lkey: uint32(lkey), rkey: uint32(rkey)}, nil
}

// HasDMABuf reports whether the library has ibv_reg_dmabuf_mr (rdma-core
// v34 and later).
func (l *Lib) HasDMABuf() bool { return l.lib.Has("ibv_reg_dmabuf_mr") }

// RegisterDMABuf registers n bytes at offset off of DMA-BUF descriptor fd
// (GPU memory exported by cuMemGetHandleForAddressRange) for local and
// remote access at virtual address iova, which is how writes address it.
func (lb *Loopback) RegisterDMABuf(off, n, iova uint64, fd int) (*MR, error) {
	if !lb.c.l.HasDMABuf() {
		return nil, &Error{Op: "ibv_reg_dmabuf_mr", Msg: lb.c.l.Soname() + " predates it (rdma-core v34+)"}
	}
	buf := make([]C.char, errLen)
	var lkey, rkey C.uint32_t
	mr := C.hb_reg_dmabuf_mr(lb.c.l.f, lb.lb, C.uint64_t(off), C.size_t(n), C.uint64_t(iova), C.int(fd), &lkey, &rkey, &buf[0], errLen)
	if mr == 0 {
		return nil, &Error{Op: "ibv_reg_dmabuf_mr", Msg: fmt.Sprintf("%d bytes at offset %d of fd %d: %s", n, off, fd, cerr(buf))}
	}
	return &MR{lb: lb, mr: mr, addr: iova, size: n, lkey: uint32(lkey), rkey: uint32(rkey)}, nil
}

// Close deregisters the region.
func (m *MR) Close() error {
	if m.mr == 0 {
		return nil
	}
	if C.hb_dereg_mr(m.lb.c.l.f, m.mr) != 0 {
		return &Error{Op: "ibv_dereg_mr", Msg: "failed"}
	}
	m.mr = 0
	return nil
}

func checkSizes(src, dst *MR, size uint64) error {
	if size == 0 || size > src.size || size > dst.size || size > 1<<31 {
		return &Error{Op: "rdma write", Msg: fmt.Sprintf("size %d does not fit the regions (%d, %d bytes)", size, src.size, dst.size)}
	}
	return nil
}

// WriteBandwidth writes size bytes from src to dst iters times through the
// loopback pair, keeping depth writes in flight, and returns the time from
// the first post to the last completion (host clock).
func (lb *Loopback) WriteBandwidth(src, dst *MR, size uint64, iters, depth int) (time.Duration, error) {
	if err := checkSizes(src, dst, size); err != nil {
		return 0, err
	}
	if depth < 1 || depth > C.HB_MAX_SEND_WR {
		depth = 128
	}
	buf := make([]C.char, errLen)
	var ns C.int64_t
	if C.hb_write_bw(lb.lb, 1, C.uint64_t(src.addr), C.uint32_t(src.lkey), C.uint64_t(dst.addr), C.uint32_t(dst.rkey),
		C.uint32_t(size), C.long(iters), C.int(depth), &ns, &buf[0], errLen) != 0 {
		return 0, &Error{Op: "rdma write", Msg: cerr(buf)}
	}
	return time.Duration(ns), nil
}

// WriteLatency writes size bytes from src to dst iters times, one at a
// time, each waiting for its completion, and returns the total time.
func (lb *Loopback) WriteLatency(src, dst *MR, size uint64, iters int) (time.Duration, error) {
	if err := checkSizes(src, dst, size); err != nil {
		return 0, err
	}
	buf := make([]C.char, errLen)
	var ns C.int64_t
	if C.hb_write_lat(lb.lb, C.uint64_t(src.addr), C.uint32_t(src.lkey), C.uint64_t(dst.addr), C.uint32_t(dst.rkey),
		C.uint32_t(size), C.long(iters), &ns, &buf[0], errLen) != 0 {
		return 0, &Error{Op: "rdma write", Msg: cerr(buf)}
	}
	return time.Duration(ns), nil
}

// MaxQPs is the most queue pairs an Endpoint has.
const MaxQPs = C.HB_MAX_QP

// Endpoint is nqp RC queue pairs on one port, with their protection domain
// and completion queue, to be connected to another node's endpoint.
type Endpoint struct {
	lb *Loopback
}

// Endpoint creates qps queue pairs on port in state INIT.
func (c *Context) Endpoint(port, qps int) (*Endpoint, error) {
	lb := (*C.hb_lb)(C.calloc(1, C.sizeof_hb_lb))
	buf := make([]C.char, errLen)
	if C.hb_ep_create(c.l.f, c.ctx, C.int(port), C.int(qps), lb, &buf[0], errLen) != 0 {
		C.free(unsafe.Pointer(lb))
		return nil, &Error{Op: "endpoint", Msg: fmt.Sprintf("%s port %d: %s", c.name, port, cerr(buf))}
	}
	return &Endpoint{lb: &Loopback{c: c, lb: lb}}, nil
}

// QPNs returns the queue pair numbers the peer connects to.
func (e *Endpoint) QPNs() []uint32 {
	out := make([]uint32, int(e.lb.lb.nqp))
	for i := range out {
		out[i] = uint32(C.hb_ep_qpn(e.lb.lb, C.int(i)))
	}
	return out
}

// Connect connects queue pair i to the peer's queue pair remoteQPN; r
// gives this port, the peer's LID or GID, the local GID index and the MTU.
func (e *Endpoint) Connect(i int, remoteQPN uint32, r Route) error {
	buf := make([]C.char, errLen)
	useGID := C.int(0)
	if r.UseGID {
		useGID = 1
	}
	gid := r.GID
	if C.hb_ep_connect(e.lb.c.l.f, e.lb.lb, C.int(i), C.int(r.Port), C.uint32_t(remoteQPN), useGID, C.int(r.GIDIndex),
		(*C.uint8_t)(unsafe.Pointer(&gid[0])), C.int(r.LID), C.int(r.MTU), &buf[0], errLen) != 0 {
		return &Error{Op: "connect", Msg: fmt.Sprintf("%s QP %d: %s", e.lb.c.name, i, cerr(buf))}
	}
	return nil
}

// Register registers host or GPU (peermem) memory; see Loopback.Register.
func (e *Endpoint) Register(addr, n uint64) (*MR, error) { return e.lb.Register(addr, n) }

// RegisterDMABuf registers GPU memory through its DMA-BUF descriptor.
func (e *Endpoint) RegisterDMABuf(off, n, iova uint64, fd int) (*MR, error) {
	return e.lb.RegisterDMABuf(off, n, iova, fd)
}

// Keys returns a region's address and remote key, for the peer.
func (m *MR) Keys() (addr uint64, rkey uint32) { return m.addr, m.rkey }

// WriteBandwidth writes size bytes from src to the peer's region (raddr,
// rkey) iters times, keeping depth writes in flight over every queue pair,
// and returns the time from the first post to the last completion.
func (e *Endpoint) WriteBandwidth(src *MR, raddr uint64, rkey uint32, size uint64, iters, depth int) (time.Duration, error) {
	if size == 0 || size > src.size || size > 1<<31 {
		return 0, &Error{Op: "rdma write", Msg: fmt.Sprintf("size %d does not fit the region (%d bytes)", size, src.size)}
	}
	if depth < 1 || depth > C.HB_CQE {
		depth = 128
	}
	buf := make([]C.char, errLen)
	var ns C.int64_t
	if C.hb_write_bw(e.lb.lb, e.lb.lb.nqp, C.uint64_t(src.addr), C.uint32_t(src.lkey), C.uint64_t(raddr), C.uint32_t(rkey),
		C.uint32_t(size), C.long(iters), C.int(depth), &ns, &buf[0], errLen) != 0 {
		return 0, &Error{Op: "rdma write", Msg: cerr(buf)}
	}
	return time.Duration(ns), nil
}

// WriteLatency writes size bytes to the peer's region iters times, one at
// a time on queue pair 0, each waiting for its completion (which comes
// with the peer's acknowledgement), and returns the total time.
func (e *Endpoint) WriteLatency(src *MR, raddr uint64, rkey uint32, size uint64, iters int) (time.Duration, error) {
	if size == 0 || size > src.size {
		return 0, &Error{Op: "rdma write", Msg: fmt.Sprintf("size %d does not fit the region (%d bytes)", size, src.size)}
	}
	buf := make([]C.char, errLen)
	var ns C.int64_t
	if C.hb_write_lat(e.lb.lb, C.uint64_t(src.addr), C.uint32_t(src.lkey), C.uint64_t(raddr), C.uint32_t(rkey),
		C.uint32_t(size), C.long(iters), &ns, &buf[0], errLen) != 0 {
		return 0, &Error{Op: "rdma write", Msg: cerr(buf)}
	}
	return time.Duration(ns), nil
}

// Close destroys the queue pairs, completion queue and protection domain.
func (e *Endpoint) Close() error { return e.lb.Close() }
