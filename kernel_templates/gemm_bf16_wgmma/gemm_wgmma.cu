// C = A * B^T on Hopper tensor cores (sm_90a): row-major A (M x K), B (N x K) and C (M x N), the layout of a
// linear layer's weights, with both operands K-major as wgmma reads them. FP32 accumulation; GEMM_TYPE picks
// the inputs and the output: 0 bfloat16, 1 half, 2 float read as TF32 (float output).
//
// One thread block is one producer warpgroup and CONSUMERS consumer warpgroups. The producer's first thread
// loads BM x BK tiles of A and BN x BK tiles of B with TMA (cp.async.bulk.tensor) into a ring of STAGES
// buffers in shared memory, each row 128 bytes swizzled by TMA exactly as wgmma's 128-byte-swizzle
// descriptors read it; a full and an empty mbarrier per stage hand the buffers back and forth (the full one
// counts the bytes TMA delivers). Each consumer owns BM / CONSUMERS rows of the tile (or whole tiles in
// turn, SCHEDULE below) and multiplies them with wgmma.mma_async m64nBN from shared memory, keeping one
// k-tile of wgmmas in flight while it waits for the next; with two consumers the producer gives its
// registers to them (setmaxnreg).
//
// Tiles: a cluster of CLUSTER_M x CLUSTER_N blocks takes a CLUSTER_M x CLUSTER_N patch of adjacent tiles.
// Blocks of a cluster row share their A tile and blocks of a cluster column their B tile: each of them loads
// a slice of it and multicasts the slice into every block that shares it (A_ROWS, SPLIT_B below), and a
// stage is refilled only once every consumer of the cluster has released it. PERSISTENT = 1 launches at most
// one cluster per CLUSTER_M * CLUSTER_N SMs, each walking the patches in steps of the grid; 2 launches the
// fewest clusters that take the same number of turns (512 patches on 132 SMs: 128 clusters of 4 rather than
// 132 of 3 or 4); 0 launches one cluster per patch. The kernel only reads the grid's size: the family's launch
// expression picks it. Patches are visited in groups of GROUP patch rows (RASTER 0) or columns (RASTER 1), or
// along a Hilbert curve over them all (RASTER 2), so that neighbouring blocks share A and B in L2.
//
// SCHEDULE 0 (cooperative): the consumers split each tile's rows. SCHEDULE 1 (ping-pong, two consumers):
// each consumer takes a whole BM x BN tile, the block's tiles going to the two in turn. The producer fills
// the ring with one tile's k-tiles after the other's, so one consumer multiplies while the other, its tile
// done, stores C: the tensor cores do not wait for the epilogue.
//
// Edges: TMA fills whatever lies outside A and B with zeros, so any M and N (and K up to the row) is right;
// a block whose tile lies wholly outside C computes zeros and stores nothing. TMA needs 16-byte aligned rows:
// K * sizeof(input) must be a multiple of 16 (the family checks the problem). EPILOGUE 0 stores C straight
// from registers with bounds checks (any N); EPILOGUE 1 and 2 write each consumer's part of the tile, 128
// bytes of columns at a time, into 128-byte-swizzled shared memory (no bank conflicts) and store it with TMA,
// which clips at the edges: 1 stages the whole part at once, 2 cycles through two buffers (less shared memory,
// so a deeper ring), 3 is 2 written with stmatrix (16-bit outputs). C's rows must then be 16-byte aligned
// (N * sizeof(output) a multiple of 16), or the tensor map is pruned. A tile whose BN is not whole 128-byte
// columns (BN 160 or 232) stores its last part column straight from registers, as EPILOGUE 0 does.
//
// BN 160 and 232 fit the waves of odd shapes: 1537 x 776 takes 25 x 5 tiles of 64 x 160 on 132 SMs (5 x 192
// computes 20% more for the same count), 3000 x 5000 exactly 4 turns of 24 x 22 tiles of 128 x 232. BN 32
// (B as N x K) gives the decode shapes of a linear layer (M = 64) a block per SM: 64 x 4096 takes 128 tiles of
// 64 x 32 where 64 x 64 leaves half the SMs idle. Its 16-bit C is narrower than a 128-byte column block, so it
// is stored from registers (EPILOGUE 0). Such small tiles fit rings of up to 14 stages (64 x 64 with 64 of k:
// 16 KB a stage), which keep more of a memory-bound stream in flight.
//
// B_KN = 1 (16-bit inputs only) takes B as K x N, row-major (C = A B, the layout of the seeds' GEMM): TMA
// reads B's rows as they are stored, 64 columns (128 bytes) of BK rows at a time, into N-major 128-byte
// swizzled atoms, and the wgmmas read B transposed (imm-trans-b). B's rows must be 16-byte aligned (N a
// multiple of 8).
#ifndef GEMM_TYPE
#define GEMM_TYPE 0
#endif
#ifndef BM
#define BM 128
#endif
#ifndef BN
#define BN 256
#endif
#ifndef BK
#define BK (128 / (GEMM_TYPE == 2 ? 4 : 2))
#endif
#ifndef STAGES
#define STAGES 4
#endif
#ifndef CONSUMERS
#define CONSUMERS 2
#endif
#ifndef CLUSTER_M
#define CLUSTER_M 1
#endif
#ifndef CLUSTER_N
#define CLUSTER_N 1
#endif
#ifndef EPILOGUE
#define EPILOGUE 1
#endif
#ifndef PERSISTENT
#define PERSISTENT 1
#endif
#ifndef RASTER
#define RASTER 0
#endif
#ifndef GROUP
#define GROUP 8
#endif

#ifndef SCHEDULE
#define SCHEDULE 0
#endif

#ifndef B_KN
#define B_KN 0
#endif

#if GEMM_TYPE != 2
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#endif

// wgmma's transpose flags for 16-bit inputs: A is always K-major; B is K-major (N x K) or N-major (K x N).
#if B_KN
#define TT_TRANS_16 ", 0, 1"
#else
#define TT_TRANS_16 ", 0, 0"
#endif

#if GEMM_TYPE == 0
typedef __nv_bfloat16 ab_t;
typedef __nv_bfloat16 c_t;
#define TT_MMA_KIND "k16.f32.bf16.bf16"
#define TT_MMA_TRANS TT_TRANS_16
#elif GEMM_TYPE == 1
typedef __half ab_t;
typedef __half c_t;
#define TT_MMA_KIND "k16.f32.f16.f16"
#define TT_MMA_TRANS TT_TRANS_16
#elif GEMM_TYPE == 2
typedef float ab_t;
typedef float c_t;
#define TT_MMA_KIND "k8.f32.tf32.tf32"
#define TT_MMA_TRANS ""
#else
#error "GEMM_TYPE is 0 (bfloat16), 1 (half) or 2 (TF32 on float)"
#endif

constexpr int AB_BYTES = sizeof(ab_t);
constexpr int C_BYTES = sizeof(c_t);
constexpr int ATOM_K = 128 / AB_BYTES;  // elements of K in one 128-byte swizzled row
constexpr int MMA_K = 32 / AB_BYTES;    // K of one wgmma
constexpr int K_ATOMS = BK / ATOM_K;
constexpr int WG_M = SCHEDULE ? BM : BM / CONSUMERS;  // rows of a tile per consumer warpgroup
constexpr int TURNS = SCHEDULE ? CONSUMERS : 1;       // tiles a block has in flight, one per consumer in turn
constexpr int STAGE_USERS = SCHEDULE ? 1 : CONSUMERS; // consumers that read each stage
constexpr int M_ITERS = WG_M / 64;    // m64 wgmmas per consumer and k step
constexpr int CLUSTER = CLUSTER_M * CLUSTER_N;
constexpr int THREADS = 128 * (CONSUMERS + 1);
constexpr int C_SUB = 128 / C_BYTES;  // columns of C in one 128-byte swizzled row
constexpr unsigned A_ATOM_BYTES = BM * 128;
constexpr unsigned B_ATOM_BYTES = BN * 128;
constexpr unsigned A_STAGE_BYTES = K_ATOMS * A_ATOM_BYTES;
constexpr unsigned B_STAGE_BYTES = K_ATOMS * B_ATOM_BYTES;
// With B_KN, a stage of B is BN / 64 atoms, each BK rows of 64 columns (128 bytes), the same bytes in all.
constexpr int N_ATOMS = BN / 64;
constexpr unsigned BKN_ATOM_BYTES = BK * 128;
// A tile that blocks of a cluster share is loaded in slices, one by each block, each multicast into all of
// them, so that the loads and their L2 requests are spread over the blocks' SMs: A's BM rows over the
// CLUSTER_N blocks of a cluster row (A_ROWS each), B's rows (or, with B_KN, its 64-column atoms) over the
// CLUSTER_M blocks of a cluster column. A slice starts on a 1024-byte swizzle atom: B_ROWS a multiple of 8;
// where BN does not split so (232), or with B_KN into whole atoms (64, 192), the first block loads the whole
// tile. The tensor maps' boxes (family.json) are these slices.
constexpr int A_ROWS = BM / CLUSTER_N;
constexpr bool SPLIT_B = CLUSTER_M > 1 && (B_KN ? N_ATOMS % CLUSTER_M == 0 : (BN / CLUSTER_M) % 8 == 0);
constexpr int B_ROWS = SPLIT_B && !B_KN ? BN / CLUSTER_M : BN;
// Staging buffers of C per consumer, each WG_M rows of 128 bytes: every whole column block (1), or two in turn.
constexpr int C_BLOCKS = BN / C_SUB;  // whole 128-byte column blocks of a tile
constexpr int C_BUFS = EPILOGUE == 1 ? C_BLOCKS : 2;
// With two buffers in turn and an odd count of column blocks a tile, the next tile starts on the other buffer:
// the last store of this tile may still be reading the one it would start on.
constexpr bool C_ALTERNATES = EPILOGUE >= 2 && C_BLOCKS % 2 == 1;
constexpr unsigned C_WG_BYTES = EPILOGUE ? C_BUFS * WG_M * 128 : 0;
// Registers after reallocation: every thread starts with ENTRY_REGS (65536 per SM, one block of THREADS);
// the producer keeps 40 and the consumers share what it gives up. setmaxnreg.inc waits until the block's pool
// holds enough, so asking for more than was given up would hang.
constexpr int ENTRY_REGS = 65536 / THREADS / 8 * 8;
constexpr int PRODUCER_REGS = 40;
constexpr int CONSUMER_REGS = (ENTRY_REGS * (CONSUMERS + 1) - PRODUCER_REGS) / CONSUMERS / 8 * 8;
static_assert(CONSUMERS == 1 || (CONSUMER_REGS <= 256 && PRODUCER_REGS + CONSUMERS * CONSUMER_REGS <=
                                                             ENTRY_REGS * (CONSUMERS + 1)),
              "the registers the consumers ask for are those the producer gives up");

static_assert(BK % ATOM_K == 0, "BK is whole 128-byte rows");
static_assert(WG_M % 64 == 0, "each consumer takes whole m64 slices");
static_assert(SCHEDULE == 0 || (SCHEDULE == 1 && CONSUMERS == 2), "ping-pong (SCHEDULE 1): two consumers");
static_assert(BN % 8 == 0 && BN >= 8 && BN <= 256, "wgmma's N is a multiple of 8 up to 256");
static_assert(BN == 32 || BN == 64 || BN == 128 || BN == 160 || BN == 192 || BN == 232 || BN == 256,
              "wgmma wrappers exist for N 32, 64, 128, 160, 192, 232, 256");
static_assert(BN >= C_SUB || EPILOGUE == 0, "a tile narrower than 128 bytes of C stores it from registers");
static_assert(BM <= 256 && BN <= 256, "a TMA box holds at most 256 rows");
static_assert(CLUSTER >= 1 && CLUSTER <= 8, "at most 8 blocks in a cluster");
static_assert(A_ROWS % 8 == 0, "each block's slice of A starts on a 1024-byte swizzle atom");
static_assert(STAGES >= 2, "at least two stages");
static_assert(EPILOGUE >= 0 && EPILOGUE <= 3, "EPILOGUE is 0, 1, 2 or 3");
static_assert(EPILOGUE != 3 || GEMM_TYPE != 2, "stmatrix (EPILOGUE 3) stores 16-bit outputs");
static_assert(!B_KN || (GEMM_TYPE != 2 && BN % 64 == 0), "B as K x N: 16-bit inputs, whole 64-column atoms");

// The kernel's view of a CUtensorMap: 128 opaque bytes, 64-byte aligned, passed as a __grid_constant__.
struct __align__(64) TensorMap {
  unsigned long long words[16];
};

__device__ __forceinline__ unsigned smem_u32(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// wgmma shared-memory descriptor of a K-major tile in 128-byte swizzled rows: start address, leading byte
// offset 16 (unused with this swizzle), stride byte offset 1024 (eight rows of 128 bytes), 128-byte swizzle.
__device__ __forceinline__ unsigned long long smem_desc(unsigned addr) {
  return static_cast<unsigned long long>((addr & 0x3FFFF) >> 4) | (1ull << 16) | (64ull << 32) | (1ull << 62);
}

// The same for B stored K x N (N-major): each 128-byte row holds 64 columns of one k, eight rows make a
// 1024-byte swizzle atom; the leading byte offset steps from one 64-column atom to the next (BK rows apart)
// and the stride byte offset from eight k rows to the next eight.
__device__ __forceinline__ unsigned long long smem_desc_kn(unsigned addr) {
  return static_cast<unsigned long long>((addr & 0x3FFFF) >> 4) |
         (static_cast<unsigned long long>(BKN_ATOM_BYTES >> 4) << 16) | (64ull << 32) | (1ull << 62);
}

// The descriptor of B at `addr`, the start of a stage.
__device__ __forceinline__ unsigned long long b_desc(unsigned addr) {
#if B_KN
  return smem_desc_kn(addr);
#else
  return smem_desc(addr);
#endif
}

// Where B's part for the wgmma at k offset `k` (elements) lies in a stage, in bytes.
__device__ __forceinline__ constexpr unsigned b_offset(int k) {
  return B_KN ? k * 128 : (k / ATOM_K) * B_ATOM_BYTES + (k % ATOM_K) * AB_BYTES;
}

// A descriptor `bytes` further on (a multiple of 16): its start address field, the address over 16, grows by
// bytes / 16. Every shared-memory address here is below 256 KB, so the field's 14 bits never carry. Each
// wgmma's descriptors are a consumer's two bases plus a constant: computed from each address, they took
// about 40 more integer instructions a k-tile and warp than cuBLAS's kernel spends (Nsight Compute), in
// vector registers moved to uniform ones before every wgmma.
__device__ __forceinline__ unsigned long long desc_plus(unsigned long long desc, unsigned bytes) {
  return desc + (bytes >> 4);
}

// The ring's next stage; its barriers' phase flips each time the ring wraps.
__device__ __forceinline__ void next_stage(int& stage, unsigned& phase) {
  if (++stage == STAGES) {
    stage = 0;
    phase ^= 1;
  }
}

__device__ __forceinline__ void mbar_init(unsigned bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_wait(unsigned bar, unsigned parity) {
  unsigned done = 0;
  do {
    asm volatile(
        "{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done)
        : "r"(bar), "r"(parity)
        : "memory");
  } while (!done);
}
// The same, where the arrivals come from other blocks of the cluster (acquire at cluster scope).
__device__ __forceinline__ void mbar_wait_cluster(unsigned bar, unsigned parity) {
  unsigned done = 0;
  do {
    asm volatile(
        "{\n.reg .pred p;\nmbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], %2;\n"
        "selp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done)
        : "r"(bar), "r"(parity)
        : "memory");
  } while (!done);
}
__device__ __forceinline__ void mbar_expect_tx(unsigned bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
}
// Arrives on the barrier at the same offset in block `cta` of the cluster (this block's own for cta == rank).
// The arrival releases at CTA scope (the default): what it orders before the producers' refill is the
// consumer's wgmma reads, complete at wgmma.wait_group. A cluster-scope release compiles to MEMBAR.ALL.GPU,
// which waits behind the wgmmas still in flight and made clusters 1.6 times slower.
__device__ __forceinline__ void mbar_arrive_cluster(unsigned bar, unsigned cta) {
  asm volatile(
      "{\n.reg .b32 remote;\nmapa.shared::cluster.u32 remote, %0, %1;\n"
      "mbarrier.arrive.shared::cluster.b64 _, [remote];\n}\n" ::"r"(bar),
      "r"(cta)
      : "memory");
}
__device__ __forceinline__ void mbar_arrive(unsigned bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(bar) : "memory");
}

__device__ __forceinline__ void tma_load(unsigned dst, const TensorMap* map, unsigned bar, int x, int y) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], "
      "[%4];" ::"r"(dst),
      "l"(reinterpret_cast<unsigned long long>(map)), "r"(x), "r"(y), "r"(bar)
      : "memory");
}
// The same box into the same offset of every block of the cluster that `mask` names; each block's barrier at
// `bar`'s offset counts the bytes.
__device__ __forceinline__ void tma_load_multicast(unsigned dst, const TensorMap* map, unsigned bar, int x, int y,
                                                   unsigned short mask) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster "
      "[%0], [%1, {%2, %3}], [%4], %5;" ::"r"(dst),
      "l"(reinterpret_cast<unsigned long long>(map)), "r"(x), "r"(y), "r"(bar), "h"(mask)
      : "memory");
}
__device__ __forceinline__ void tma_store(const TensorMap* map, unsigned src, int x, int y) {
  asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [%0, {%1, %2}], [%3];" ::"l"(
                   reinterpret_cast<unsigned long long>(map)),
               "r"(x), "r"(y), "r"(src)
               : "memory");
}
__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release;\nbarrier.cluster.wait.acquire;\n" ::: "memory");
}
__device__ __forceinline__ void named_sync(unsigned id, unsigned threads) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}
__device__ __forceinline__ void named_arrive(unsigned id, unsigned threads) {
  asm volatile("bar.arrive %0, %1;" ::"r"(id), "r"(threads) : "memory");
}
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
}

// D (64 x N, FP32, this thread's N / 2 values) += A (64 x MMA_K) * B (N x MMA_K)^T, both from shared memory;
// accumulate == 0 overwrites D.
__device__ __forceinline__ void wgmma_n32(float (&d)[16], unsigned long long a, unsigned long long b,
                                          int accumulate) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %18, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n32" TT_MMA_KIND " {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}, "
      "%16, %17, p, 1, 1" TT_MMA_TRANS ";\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
      : "l"(a), "l"(b), "r"(accumulate));
}
__device__ __forceinline__ void wgmma_n64(float (&d)[32], unsigned long long a, unsigned long long b,
                                          int accumulate) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64" TT_MMA_KIND " {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "
      "%32, %33, p, 1, 1" TT_MMA_TRANS ";\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
      : "l"(a), "l"(b), "r"(accumulate));
}
__device__ __forceinline__ void wgmma_n128(float (&d)[64], unsigned long long a, unsigned long long b,
                                          int accumulate) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128" TT_MMA_KIND " {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "
      "%64, %65, p, 1, 1" TT_MMA_TRANS ";\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
      : "l"(a), "l"(b), "r"(accumulate));
}
__device__ __forceinline__ void wgmma_n192(float (&d)[96], unsigned long long a, unsigned long long b,
                                          int accumulate) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %98, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n192" TT_MMA_KIND " {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
      "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
      "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95}, "
      "%96, %97, p, 1, 1" TT_MMA_TRANS ";\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
        "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
        "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
        "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),
        "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95])
      : "l"(a), "l"(b), "r"(accumulate));
}
__device__ __forceinline__ void wgmma_n256(float (&d)[128], unsigned long long a, unsigned long long b,
                                          int accumulate) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n256" TT_MMA_KIND " {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
      "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
      "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "
      "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, "
      "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, "
      "%128, %129, p, 1, 1" TT_MMA_TRANS ";\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
        "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
        "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
        "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),
        "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]),
        "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),
        "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]),
        "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]),
        "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
      : "l"(a), "l"(b), "r"(accumulate));
}

__device__ __forceinline__ void wgmma_n160(float (&d)[80], unsigned long long a, unsigned long long b,
                                          int accumulate) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %82, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n160" TT_MMA_KIND " {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
      "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79}, "
      "%80, %81, p, 1, 1" TT_MMA_TRANS ";\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
        "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
        "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79])
      : "l"(a), "l"(b), "r"(accumulate));
}
__device__ __forceinline__ void wgmma_n232(float (&d)[116], unsigned long long a, unsigned long long b,
                                          int accumulate) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %118, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n232" TT_MMA_KIND " {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
      "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
      "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "
      "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, "
      "%112, %113, %114, %115}, "
      "%116, %117, p, 1, 1" TT_MMA_TRANS ";\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
        "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
        "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
        "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),
        "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]),
        "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),
        "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]),
        "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115])
      : "l"(a), "l"(b), "r"(accumulate));
}

template <int N>
__device__ __forceinline__ void wgmma(float (&d)[N / 2], unsigned long long a, unsigned long long b,
                                      int accumulate) {
  if constexpr (N == 32) wgmma_n32(d, a, b, accumulate);
  if constexpr (N == 64) wgmma_n64(d, a, b, accumulate);
  if constexpr (N == 128) wgmma_n128(d, a, b, accumulate);
  if constexpr (N == 160) wgmma_n160(d, a, b, accumulate);
  if constexpr (N == 192) wgmma_n192(d, a, b, accumulate);
  if constexpr (N == 232) wgmma_n232(d, a, b, accumulate);
  if constexpr (N == 256) wgmma_n256(d, a, b, accumulate);
}

// The cell at position `d` of a generalised Hilbert curve over a w x h grid of patches (any w and h, not only
// powers of two): x counts patch columns, y patch rows. The curve is walked from the top: a rectangle with its
// long side `a` and its short side `b` (vectors from its first cell) is cut in two along `a` when it is much
// longer than wide, else into three (half of `b` across half of `a`, the whole of `a` over the rest of `b`,
// and back down the other half), each part a smaller rectangle entered at the corner where the last one
// ended; `d` descends into the part that holds it. Odd halves are rounded so that each part's path can end
// next to the following part's start. Consecutive cells are neighbours, except at the odd-sized cuts.
__device__ __forceinline__ void hilbert_cell(int d, int w, int h, int& x, int& y) {
  int ax = w, ay = 0, bx = 0, by = h;
  if (h > w) {
    ax = 0, ay = h, bx = w, by = 0;
  }
  x = 0, y = 0;
  for (;;) {
    const int len_a = abs(ax + ay), len_b = abs(bx + by);
    const int ux = (ax > 0) - (ax < 0), uy = (ay > 0) - (ay < 0);  // unit steps along a and along b
    const int vx = (bx > 0) - (bx < 0), vy = (by > 0) - (by < 0);
    if (len_b == 1) {
      x += ux * d, y += uy * d;
      return;
    }
    if (len_a == 1) {
      x += vx * d, y += vy * d;
      return;
    }
    int hax = ax / 2, hay = ay / 2, hbx = bx / 2, hby = by / 2;
    if (2 * len_a > 3 * len_b) {
      if (abs(hax + hay) % 2 && len_a > 2) hax += ux, hay += uy;
      const int first = abs(hax + hay) * len_b;
      if (d < first) {
        ax = hax, ay = hay;
      } else {
        d -= first, x += hax, y += hay, ax -= hax, ay -= hay;
      }
      continue;
    }
    if (abs(hbx + hby) % 2 && len_b > 2) hbx += vx, hby += vy;
    const int half_a = abs(hax + hay), half_b = abs(hbx + hby);
    const int first = half_a * half_b, second = len_a * (len_b - half_b);
    if (d < first) {
      ax = hbx, ay = hby, bx = hax, by = hay;
    } else if (d < first + second) {
      d -= first, x += hbx, y += hby, bx -= hbx, by -= hby;
    } else {
      d -= first + second;
      x += (ax - ux) + (hbx - vx), y += (ay - uy) + (hby - vy);
      const int rx = ax - hax, ry = ay - hay;
      ax = -hbx, ay = -hby, bx = -rx, by = -ry;
    }
  }
}

// The patch of tiles (cm, cn), in units of clusters, that a cluster takes `index`-th: groups of GROUP patch
// rows walked column by column (RASTER 0), groups of GROUP patch columns walked row by row (RASTER 1), or
// the generalised Hilbert curve over all patches (RASTER 2), so that the patches in flight at once form a
// compact region and share more of A and B in L2.
__device__ __forceinline__ void patch_of(int index, int patches_m, int patches_n, int& cm, int& cn) {
#if RASTER == 2
  hilbert_cell(index, patches_n, patches_m, cn, cm);
#elif RASTER == 0
  const int per_group = GROUP * patches_n;
  const int group = index / per_group;
  const int first = group * GROUP;
  const int rows = min(patches_m - first, GROUP);
  const int in = index - group * per_group;
  cm = first + in % rows;
  cn = in / rows;
#else
  const int per_group = GROUP * patches_m;
  const int group = index / per_group;
  const int first = group * GROUP;
  const int cols = min(patches_n - first, GROUP);
  const int in = index - group * per_group;
  cn = first + in % cols;
  cm = in / cols;
#endif
}

__device__ __forceinline__ void store_pair(c_t* p, float a, float b) {
#if GEMM_TYPE == 0
  *reinterpret_cast<__nv_bfloat162*>(p) = __floats2bfloat162_rn(a, b);
#elif GEMM_TYPE == 1
  *reinterpret_cast<__half2*>(p) = __floats2half2_rn(a, b);
#else
  *reinterpret_cast<float2*>(p) = make_float2(a, b);
#endif
}
__device__ __forceinline__ c_t to_output(float v) {
#if GEMM_TYPE == 0
  return __float2bfloat16_rn(v);
#elif GEMM_TYPE == 1
  return __float2half_rn(v);
#else
  return v;
#endif
}
#if GEMM_TYPE != 2
// Two outputs as 16-bit values in one register, the first in the low half.
__device__ __forceinline__ unsigned pack_pair(float a, float b) {
#if GEMM_TYPE == 0
  __nv_bfloat162 v = __floats2bfloat162_rn(a, b);
#else
  __half2 v = __floats2half2_rn(a, b);
#endif
  return *reinterpret_cast<unsigned*>(&v);
}
#endif
// Two adjacent outputs into shared memory at byte address `addr` (8-byte aligned for float, 4 for 16 bits).
__device__ __forceinline__ void st_shared_pair(unsigned addr, float a, float b) {
#if GEMM_TYPE != 2
  asm volatile("st.shared.b32 [%0], %1;" ::"r"(addr), "r"(pack_pair(a, b)) : "memory");
#else
  asm volatile("st.shared.v2.f32 [%0], {%1, %2};" ::"r"(addr), "f"(a), "f"(b) : "memory");
#endif
}

#if EPILOGUE == 3
// Four 8 x 8 matrices of 16-bit values into shared memory; lane l gives the address of row l % 8 of matrix
// l / 8, and register q holds this thread's pair of matrix q (row lane / 4, columns 2 (lane % 4) and next).
__device__ __forceinline__ void stmatrix_x4(unsigned addr, unsigned r0, unsigned r1, unsigned r2,
                                            unsigned r3) {
  asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};" ::"r"(addr), "r"(r0),
               "r"(r1), "r"(r2), "r"(r3)
               : "memory");
}
#endif

// Column block b of a consumer's accumulators (C_SUB columns, 128 bytes a row; their layout is described at
// the epilogue) into a staging buffer of WG_M rows in TMA's 128-byte swizzle: 16-byte chunk c of row r goes
// to chunk c ^ (r % 8), so no two lanes of a store share a bank. EPILOGUE 3 writes with stmatrix four 8 x 8
// blocks (rows r and r + 8 of column groups j and j + 1) an instruction: a quarter of the stores.
__device__ __forceinline__ void stage_column_block(unsigned buffer, const float (&acc)[M_ITERS][BN / 2],
                                                   int b, int warp, int lane) {
#pragma unroll
  for (int mi = 0; mi < M_ITERS; ++mi) {
#if EPILOGUE == 3
    const int q = lane / 8;                                    // the matrix whose row this lane addresses
    const int r = mi * 64 + warp * 16 + 8 * (q % 2) + lane % 8;  // row within the consumer's part
#pragma unroll
    for (int jp = 0; jp < C_SUB / 16; ++jp) {
      const int j = b * (C_SUB / 8) + 2 * jp;
      const unsigned addr = buffer + r * 128 + (((2 * jp + q / 2) ^ (r & 7)) << 4);
      const float* v = &acc[mi][4 * j];
      stmatrix_x4(addr, pack_pair(v[0], v[1]), pack_pair(v[2], v[3]), pack_pair(v[4], v[5]),
                  pack_pair(v[6], v[7]));
    }
#else
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int r = mi * 64 + warp * 16 + lane / 4 + 8 * h;  // row within the consumer's part
#pragma unroll
      for (int jj = 0; jj < C_SUB / 8; ++jj) {
        const int j = b * (C_SUB / 8) + jj;
        const int byte = (8 * jj + 2 * (lane % 4)) * C_BYTES;  // within the row's 128 bytes
        const unsigned addr = buffer + r * 128 + ((((byte >> 4) ^ (r & 7)) << 4) | (byte & 15));
        st_shared_pair(addr, acc[mi][4 * j + 2 * h], acc[mi][4 * j + 2 * h + 1]);
      }
    }
#endif
  }
}

// A consumer's accumulators from 8-column group j0 on straight to C (rows from `row0`, columns from `n0`),
// clipped at the edges of C; pairs of outputs in one store where N is even. The layout is described at the
// epilogue.
__device__ __forceinline__ void store_columns(c_t* C, const float (&acc)[M_ITERS][BN / 2], int row0, int n0,
                                              int M, int N, int j0, int warp, int lane) {
  const bool pairs = (N % 2) == 0;
#pragma unroll
  for (int mi = 0; mi < M_ITERS; ++mi)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int row = row0 + mi * 64 + warp * 16 + lane / 4 + 8 * h;
      if (row >= M) continue;
      c_t* out = C + static_cast<long long>(row) * N;
#pragma unroll
      for (int j = j0; j < BN / 8; ++j) {
        const int col = n0 + 8 * j + 2 * (lane % 4);
        const float v0 = acc[mi][4 * j + 2 * h], v1 = acc[mi][4 * j + 2 * h + 1];
        if (pairs && col + 1 < N) {
          store_pair(out + col, v0, v1);
        } else {
          if (col < N) out[col] = to_output(v0);
          if (col + 1 < N) out[col + 1] = to_output(v1);
        }
      }
    }
}

extern "C" __global__ void __launch_bounds__(THREADS, 1)
    gemm_wgmma(const ab_t* A, const ab_t* B, c_t* C, const __grid_constant__ TensorMap tma_a,
               const __grid_constant__ TensorMap tma_b, const __grid_constant__ TensorMap tma_c, int M, int N,
               int K) {
  // Shared memory, from a 1024-byte aligned base (128-byte swizzle repeats every 1024 bytes):
  // [STAGES][K_ATOMS][BM][128 B] A, [STAGES][K_ATOMS][BN][128 B] B, [CONSUMERS][BN / C_SUB][WG_M][128 B] C,
  // then the full and empty barriers of each stage.
  extern __shared__ unsigned char smem_raw[];
  const unsigned raw = smem_u32(smem_raw);
  const unsigned sA = (raw + 1023u) & ~1023u;
  const unsigned sB = sA + STAGES * A_STAGE_BYTES;
  const unsigned sC = sB + STAGES * B_STAGE_BYTES;
  const unsigned full_bar = sC + CONSUMERS * C_WG_BYTES;
  const unsigned empty_bar = full_bar + 8 * STAGES;

  // The same in every thread of a warp, which the compiler sees through the shuffle: the consumers'
  // descriptors then live in uniform registers, where wgmma reads them.
  const int warpgroup = __shfl_sync(0xffffffffu, static_cast<int>(threadIdx.x / 128), 0);
  const int t = threadIdx.x % 128;
  unsigned rank = 0;
  if (CLUSTER > 1) asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
  const unsigned rank_m = rank / CLUSTER_N, rank_n = rank % CLUSTER_N;

  if (threadIdx.x == 0) {
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(full_bar + 8 * s, 1);
      mbar_init(empty_bar + 8 * s, STAGE_USERS * 4 * CLUSTER);  // each reading consumer warp, every block
    }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  // Every block's barriers are initialised before any block of the cluster multicasts into it.
  if (CLUSTER > 1)
    cluster_sync();
  else
    __syncthreads();

  const int tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN;
  const int patches_m = (tiles_m + CLUSTER_M - 1) / CLUSTER_M, patches_n = (tiles_n + CLUSTER_N - 1) / CLUSTER_N;
  const int patches = patches_m * patches_n;
  const int k_tiles = (K + BK - 1) / BK;
  const int cluster_id = blockIdx.x / CLUSTER, clusters = gridDim.x / CLUSTER;

  if (warpgroup == 0) {
    // The producer: one thread issues every load.
#if CONSUMERS > 1
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(PRODUCER_REGS));
#endif
    if (t == 0) {
      int stage = 0;
      unsigned phase = 0;
      // The blocks that share this block's A tile (its cluster row) and its B tile (its cluster column).
      unsigned short row_mask = 0, col_mask = 0;
      for (int j = 0; j < CLUSTER_N; ++j) row_mask |= 1u << (rank_m * CLUSTER_N + j);
      for (int i = 0; i < CLUSTER_M; ++i) col_mask |= 1u << (i * CLUSTER_N + rank_n);
      for (int patch = cluster_id; patch < patches; patch += clusters) {
        int cm, cn;
        patch_of(patch, patches_m, patches_n, cm, cn);
        const int m0 = (cm * CLUSTER_M + rank_m) * BM, n0 = (cn * CLUSTER_N + rank_n) * BN;
        for (int kt = 0; kt < k_tiles; ++kt) {
          // Fresh barriers are in phase 0: waiting on parity 1 passes at once, so the first STAGES loads go.
          if (CLUSTER > 1)
            mbar_wait_cluster(empty_bar + 8 * stage, phase ^ 1);
          else
            mbar_wait(empty_bar + 8 * stage, phase ^ 1);
          mbar_expect_tx(full_bar + 8 * stage, A_STAGE_BYTES + B_STAGE_BYTES);
          const unsigned bar = full_bar + 8 * stage;
#pragma unroll
          for (int a = 0; a < K_ATOMS; ++a) {
            const int k0 = kt * BK + a * ATOM_K;
            const unsigned dst_a = sA + stage * A_STAGE_BYTES + a * A_ATOM_BYTES;
            if (CLUSTER_N == 1)
              tma_load(dst_a, &tma_a, bar, k0, m0);
            else  // this block's slice of the rows, into every block of its cluster row
              tma_load_multicast(dst_a + rank_n * A_ROWS * 128, &tma_a, bar, k0, m0 + rank_n * A_ROWS,
                                 row_mask);
          }
          // B: K-major atoms of BN rows and 128 bytes of k, or (B_KN) N-major atoms of BK rows of 64 columns.
          constexpr int B_LOADS = B_KN ? N_ATOMS : K_ATOMS;
#pragma unroll
          for (int a = 0; a < B_LOADS; ++a) {
            const unsigned dst_b = sB + stage * B_STAGE_BYTES + a * (B_KN ? BKN_ATOM_BYTES : B_ATOM_BYTES);
            const int x = B_KN ? n0 + a * 64 : kt * BK + a * ATOM_K, y = B_KN ? kt * BK : n0;
            if (CLUSTER_M == 1) {
              tma_load(dst_b, &tma_b, bar, x, y);
            } else if (SPLIT_B && B_KN) {  // this block's share of the atoms
              if (a / (N_ATOMS / CLUSTER_M) == static_cast<int>(rank_m))
                tma_load_multicast(dst_b, &tma_b, bar, x, y, col_mask);
            } else if (SPLIT_B) {  // this block's slice of the rows
              tma_load_multicast(dst_b + rank_m * B_ROWS * 128, &tma_b, bar, x, y + rank_m * B_ROWS, col_mask);
            } else if (rank_m == 0) {
              tma_load_multicast(dst_b, &tma_b, bar, x, y, col_mask);
            }
          }
          next_stage(stage, phase);
        }
      }
      // No block leaves while another block of its cluster may still arrive on its barriers: the producer
      // waits until every consumer of the cluster has released each stage once more (a stage never filled
      // passes at once), so the last arrivals on this block's barriers have landed. The rest of the block
      // goes on to its epilogue and leaves without waiting for the other blocks' (a cluster-wide barrier at
      // the end made clusters 0.4 to 5% slower).
      if (CLUSTER > 1)
        for (int s = 0; s < STAGES; ++s) {
          mbar_wait_cluster(empty_bar + 8 * stage, phase ^ 1);
          next_stage(stage, phase);
        }
    }
  } else {
#if CONSUMERS > 1
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(CONSUMER_REGS));
#endif
    const int wg = warpgroup - 1;
    const int warp = t / 32, lane = t % 32;
    const int row0 = SCHEDULE ? 0 : wg * WG_M;  // this consumer's first row in the tile
    // The descriptors of this consumer's rows of A and of B at the start of stage 0 (see desc_plus).
    const unsigned long long a_desc0 = smem_desc(sA + row0 * 128), b_desc0 = b_desc(sB);
    float acc[M_ITERS][BN / 2];
    int stage = 0;
    unsigned phase = 0;
    // Passes over n k-tiles of the ring that another consumer reads (ping-pong): each wrap flips the phase.
    auto skip = [&](int n) {
      const int total = stage + n;
      phase ^= (total / STAGES) & 1;
      stage = total % STAGES;
    };
    // Each consumer warp, once its wgmmas on a stage are done, releases the stage in every block of the
    // cluster (the producers there may multicast into all of them): lane c arrives on block c's barrier.
    auto release = [&](int s) {
      if (CLUSTER == 1) {
        if (lane == 0) mbar_arrive(empty_bar + 8 * s);
      } else if (lane < CLUSTER) {
        mbar_arrive_cluster(empty_bar + 8 * s, lane);
      }
    };
    // The block's tiles go to its consumers in turn (ping-pong), or each to all of them (cooperative).
    if (SCHEDULE) skip(wg * k_tiles);
#if EPILOGUE != 0
    unsigned c_turn = 0;  // the staging buffer this consumer's next tile starts on (C_ALTERNATES)
#endif
    const int first = cluster_id + (SCHEDULE ? wg : 0) * clusters;
    for (int patch = first; patch < patches; patch += TURNS * clusters) {
      int cm, cn;
      patch_of(patch, patches_m, patches_n, cm, cn);
      const int m0 = (cm * CLUSTER_M + rank_m) * BM, n0 = (cn * CLUSTER_N + rank_n) * BN;
      // Ping-pong: a consumer starts a tile's multiplies once the other has issued its previous tile's (named
      // barrier 3 + wg, which the other arrives on). So the two take the tensor cores in turn, and every full
      // barrier a consumer waits on has completed its previous phase: a parity wait cannot pass early.
      if (SCHEDULE && (wg == 1 || patch != first)) named_sync(3 + wg, 256);
      int previous = -1;
      for (int kt = 0; kt < k_tiles; ++kt) {
        mbar_wait(full_bar + 8 * stage, phase);
        wgmma_fence();
        const unsigned long long a_stage = desc_plus(a_desc0, stage * A_STAGE_BYTES);
        const unsigned long long b_stage = desc_plus(b_desc0, stage * B_STAGE_BYTES);
#pragma unroll
        for (int a = 0; a < K_ATOMS; ++a) {
#pragma unroll
          for (int ks = 0; ks < ATOM_K / MMA_K; ++ks) {
            const unsigned long long db = desc_plus(b_stage, b_offset(a * ATOM_K + ks * MMA_K));
#pragma unroll
            for (int mi = 0; mi < M_ITERS; ++mi) {
              const unsigned long long da =
                  desc_plus(a_stage, a * A_ATOM_BYTES + mi * 64 * 128 + ks * MMA_K * AB_BYTES);
              wgmma<BN>(acc[mi], da, db, (kt | a | ks) != 0);
            }
          }
        }
        wgmma_commit();
        // The previous k-tile's wgmmas are done: its stage goes back to the producer.
        wgmma_wait<1>();
        if (previous >= 0) release(previous);
        previous = stage;
        next_stage(stage, phase);
      }
      // The other consumer's next tile (the one after this patch in the block's walk), if any, may start.
      if (SCHEDULE && patch + clusters < patches) named_arrive(3 + (1 - wg), 256);
      wgmma_wait<0>();
      if (previous >= 0) release(previous);
      if (SCHEDULE) skip((TURNS - 1) * k_tiles);  // the other consumer's next tile

      // Thread t holds, for each m64 slice mi and each 8 columns j, rows r and r + 8 (r = 16 warp + lane / 4)
      // at columns 8 j + 2 (lane % 4) and the next: acc[mi][4 j + 2 h + {0, 1}] for row r + 8 h.
#if EPILOGUE == 0
      store_columns(C, acc, m0 + row0, n0, M, N, 0, warp, lane);
#else
      // Column block b (C_SUB columns, 128 bytes a row) of this consumer's part goes through staging buffer
      // (b + c_turn) % C_BUFS: written in TMA's 128-byte swizzle (no bank conflicts), made visible to TMA (the
      // async proxy), and stored by one thread, which clips at the edges of C.
      const unsigned stage_c = sC + wg * C_WG_BYTES;
#pragma unroll
      for (int b = 0; b < C_BLOCKS; ++b) {
        const unsigned buffer = stage_c + ((b + c_turn) % C_BUFS) * (WG_M * 128);
        // The store that read this buffer last, C_BUFS stores ago (in this tile or the one before), is done.
        if (t == 0) asm volatile("cp.async.bulk.wait_group.read %0;" ::"n"(C_BUFS - 1) : "memory");
        named_sync(1 + wg, 128);
        stage_column_block(buffer, acc, b, warp, lane);
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
        named_sync(1 + wg, 128);
        if (t == 0) {
          tma_store(&tma_c, buffer, n0 + b * C_SUB, m0 + row0);
          asm volatile("cp.async.bulk.commit_group;" ::: "memory");
        }
      }
      if (C_ALTERNATES) c_turn ^= 1;
      // A tile BN wide that is not whole 128-byte columns stores the last part column from registers.
      if (BN % C_SUB) store_columns(C, acc, m0 + row0, n0, M, N, C_BLOCKS * (C_SUB / 8), warp, lane);
#endif
    }
#if EPILOGUE != 0
    if (t == 0) asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
#endif
  }
}
