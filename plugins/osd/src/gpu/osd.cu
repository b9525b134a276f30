// SPDX-License-Identifier: MIT OR Apache-2.0
// The GPU painter of rsosd: draw lists applied to frames in device memory with exactly the integer
// rules of the CPU painter (src/paint.rs), so that both write the same bytes.
//
// Compiled at run time by NVRTC without CUDA headers: plain C, one #[repr(C)] parameter struct per
// kernel, mirrored in src/gpu/prepare.rs (field by field; sizes are tested there).
//
// Work is split so that the host prepares little (src/gpu/prepare.rs):
// - fills and text runs go up as one array of ops in paint order (fills, then runs), and
//   osd_paint_tiles runs one block per tile of 16x16 samples of a plane: the block scans the ops
//   256 at a time, each thread testing one against the tile with the CPU painter's covering rule,
//   keeps those that touch the tile in order (ballot compaction into shared memory), and each
//   thread applies them to its sample, which is read once and written once.
// - blurs are grouped into levels of ops with disjoint rectangles (an op overlapping an earlier
//   one goes to a later level), each op split into a job per plane, and each level is one launch
//   per pass over all its jobs: osd_pixelate (one block per pixelation block), then three times
//   osd_blur_rows (image to scratch) and osd_blur_cols (scratch to image), one thread per sample.

typedef unsigned char u8;
typedef unsigned int u32;
typedef unsigned long long u64;

#define TILE 16
#define TILE_THREADS (TILE * TILE)
#define PIXELATE_THREADS 128

struct Plane {
    u64 ptr;
    int pitch;
    int width;     // samples
    int height;    // rows
    int first;     // first of the op colour bytes this plane takes
    int channels;  // bytes per sample: 1, 2 or 4
    int sub;       // log2 of the subsampling, both directions
};

// A fill or a text run (`text` set, with its glyphs): frame rectangle, colour bytes of every
// plane in plane order, opacity.
struct Op {
    int x0, y0, x1, y1;
    u8 v[4];
    u32 alpha;
    u32 text;
    u32 glyph_first;
    u32 glyph_count;
};

// A glyph placed in the frame, and its top-left corner in the atlas.
struct Glyph {
    int x0, y0, x1, y1;
    int ax, ay;
};

struct TileParams {
    struct Plane planes[3];
    u64 ops;
    u64 glyphs;
    u64 atlas;
    u32 count;        // ops
    int plane_first;  // plane of blockIdx.y == 0
    int tiles_x;      // tiles per row of these planes
    int atlas_width;
};

// One blur op on one plane: the samples entirely inside the op's rectangle, the pixelation block
// or blur radius, where its work items start in the launch (pixelation blocks, or samples) and
// its region in the scratch buffer.
struct BlurJob {
    int x0, y0, x1, y1;
    int plane;
    int size;
    u32 start;
    u32 scratch;
};

struct BlurParams {
    struct Plane planes[3];
    u64 jobs;
    u64 scratch;
    u32 count;
    u32 items;
};

// `d` blended towards `s` by `a`/255, rounded: blend() in paint.rs.
__device__ __forceinline__ u32 blend(u32 d, u32 s, u32 a) {
    u32 v = s * a + d * (255u - a) + 128u;
    return (v + (v >> 8)) >> 8;
}

// The samples of a plane subsampled by `sub` that the frame rectangle of `op` touches, before
// clipping to the plane: Plane::covering in paint.rs (64-bit, so that no edge overflows).
struct Span {
    long long x0, y0, x1, y1;
};

__device__ __forceinline__ struct Span covering(const struct Op& op, int sub) {
    const long long m = (1 << sub) - 1;
    struct Span s;
    s.x0 = op.x0 >> sub;
    s.y0 = op.y0 >> sub;
    s.x1 = ((long long)op.x1 + m) >> sub;
    s.y1 = ((long long)op.y1 + m) >> sub;
    return s;
}

// Coverage of text run `op` at frame pixel (px, py): the largest of its glyphs covering it,
// zero outside the run's rectangle or any glyph (the planner's composed coverage).
__device__ u32 coverage_at(const struct Op& op, const struct Glyph* glyphs, const u8* atlas,
                           int atlas_width, int px, int py) {
    if (px < op.x0 || px >= op.x1 || py < op.y0 || py >= op.y1) {
        return 0;
    }
    u32 c = 0;
    const u32 end = op.glyph_first + op.glyph_count;
    for (u32 i = op.glyph_first; i < end; ++i) {
        const struct Glyph g = glyphs[i];
        if (px >= g.x0 && px < g.x1 && py >= g.y0 && py < g.y1) {
            const u32 v = atlas[(size_t)(g.ay + py - g.y0) * (size_t)atlas_width
                                + (size_t)(g.ax + px - g.x0)];
            c = v > c ? v : c;
        }
    }
    return c;
}

// The op applied to sample (sx, sy) of plane `pl`, held in `d`.
__device__ __forceinline__ void apply(const struct Op& op, const struct Plane& pl,
                                      const struct Glyph* glyphs, const u8* atlas,
                                      int atlas_width, int sx, int sy, u32 d[4]) {
    if (op.text) {
        // A subsampled sample takes the mean coverage of its pixels (truncated), those outside
        // the run counting as zero: Plane::text_2x2.
        const int span = 1 << pl.sub;
        u32 sum = 0;
        for (int dy = 0; dy < span; ++dy) {
            for (int dx = 0; dx < span; ++dx) {
                sum += coverage_at(op, glyphs, atlas, atlas_width, sx * span + dx,
                                   sy * span + dy);
            }
        }
        const u32 cov = sum >> (2 * pl.sub);
        const u32 a = op.alpha == 255u ? cov : (cov * op.alpha + 127u) / 255u;
#pragma unroll
        for (int c = 0; c < 4; ++c) {
            if (c < pl.channels) {
                d[c] = blend(d[c], op.v[pl.first + c], a);
            }
        }
    } else {
#pragma unroll
        for (int c = 0; c < 4; ++c) {
            if (c < pl.channels) {
                d[c] = op.alpha == 255u ? (u32)op.v[pl.first + c]
                                        : blend(d[c], op.v[pl.first + c], op.alpha);
            }
        }
    }
}

// Fills and text runs on one or more planes of one subsampling: one block of TILE x TILE
// threads per tile of TILE x TILE samples, grid (tiles of a plane, planes).
extern "C" __global__ void osd_paint_tiles(struct TileParams p) {
    __shared__ u32 hits[TILE_THREADS];
    __shared__ u32 warp_hits[TILE_THREADS / 32];
    const struct Plane pl = p.planes[p.plane_first + (int)blockIdx.y];
    const int tx0 = ((int)blockIdx.x % p.tiles_x) * TILE;
    const int ty0 = ((int)blockIdx.x / p.tiles_x) * TILE;
    if (tx0 >= pl.width || ty0 >= pl.height) {
        return;  // the whole block: no barrier is left waiting
    }
    const int tx1 = tx0 + TILE < pl.width ? tx0 + TILE : pl.width;
    const int ty1 = ty0 + TILE < pl.height ? ty0 + TILE : pl.height;
    const int sx = tx0 + (int)threadIdx.x;
    const int sy = ty0 + (int)threadIdx.y;
    const bool mine = sx < pl.width && sy < pl.height;
    const int tid = (int)threadIdx.y * TILE + (int)threadIdx.x;
    const int lane = tid & 31;
    const int warp = tid >> 5;
    u8* px = (u8*)pl.ptr + (size_t)sy * (size_t)pl.pitch + (size_t)sx * (size_t)pl.channels;
    u32 d[4] = {0, 0, 0, 0};
    if (mine) {
#pragma unroll
        for (int c = 0; c < 4; ++c) {
            if (c < pl.channels) {
                d[c] = px[c];
            }
        }
    }
    const struct Op* ops = (const struct Op*)p.ops;
    const struct Glyph* glyphs = (const struct Glyph*)p.glyphs;
    const u8* atlas = (const u8*)p.atlas;
    bool changed = false;
    for (u32 base = 0; base < p.count; base += TILE_THREADS) {
        // Each thread tests one op against the tile...
        const u32 i = base + (u32)tid;
        bool hit = false;
        if (i < p.count) {
            const struct Span s = covering(ops[i], pl.sub);
            hit = s.x0 < tx1 && s.x1 > tx0 && s.y0 < ty1 && s.y1 > ty0;
        }
        // ...and those that touch it are listed in op order.
        const u32 ballot = __ballot_sync(0xffffffffu, hit);
        if (lane == 0) {
            warp_hits[warp] = __popc(ballot);
        }
        __syncthreads();
        u32 before = 0;
        u32 total = 0;
        for (int w = 0; w < TILE_THREADS / 32; ++w) {
            before += w < warp ? warp_hits[w] : 0u;
            total += warp_hits[w];
        }
        if (hit) {
            hits[before + __popc(ballot & ((1u << lane) - 1u))] = i;
        }
        __syncthreads();
        if (mine) {
            for (u32 k = 0; k < total; ++k) {
                const struct Op op = ops[hits[k]];
                const struct Span s = covering(op, pl.sub);
                if (sx >= s.x0 && sx < s.x1 && sy >= s.y0 && sy < s.y1) {
                    apply(op, pl, glyphs, atlas, p.atlas_width, sx, sy, d);
                    changed = true;
                }
            }
        }
        __syncthreads();
    }
    if (changed) {
#pragma unroll
        for (int c = 0; c < 4; ++c) {
            if (c < pl.channels) {
                px[c] = (u8)d[c];
            }
        }
    }
}

// The job whose first work item is the last one at or before `item`; the first job starts at
// item 0.
__device__ int find_job(const struct BlurJob* jobs, u32 count, u32 item) {
    u32 lo = 0;
    u32 hi = count;
    while (hi - lo > 1) {
        const u32 mid = (lo + hi) / 2;
        if (jobs[mid].start <= item) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    return (int)lo;
}

// Pixelation: one block of PIXELATE_THREADS threads per pixelation block, which becomes the
// rounded mean of its samples, channel by channel (Plane::pixelate).
extern "C" __global__ void osd_pixelate(struct BlurParams p) {
    __shared__ u32 sums[4][PIXELATE_THREADS];
    __shared__ u32 mean[4];
    const struct BlurJob* jobs = (const struct BlurJob*)p.jobs;
    const struct BlurJob job = jobs[find_job(jobs, p.count, blockIdx.x)];
    const struct Plane pl = p.planes[job.plane];
    const u32 local = blockIdx.x - job.start;
    const long long size = job.size;
    const long long across = ((long long)(job.x1 - job.x0) + size - 1) / size;
    const long long bx = job.x0 + (long long)(local % across) * size;
    const long long by = job.y0 + (long long)(local / across) * size;
    const int x0 = (int)bx;
    const int y0 = (int)by;
    const int x1 = (int)(bx + size < job.x1 ? bx + size : job.x1);
    const int y1 = (int)(by + size < job.y1 ? by + size : job.y1);
    const u32 w = (u32)(x1 - x0);
    const u32 n = w * (u32)(y1 - y0);
    u8* base = (u8*)pl.ptr;
    u32 s[4] = {0, 0, 0, 0};
    for (u32 k = threadIdx.x; k < n; k += blockDim.x) {
        const u8* q = base + (size_t)(y0 + (int)(k / w)) * (size_t)pl.pitch
                      + (size_t)(x0 + (int)(k % w)) * (size_t)pl.channels;
#pragma unroll
        for (int c = 0; c < 4; ++c) {
            if (c < pl.channels) {
                s[c] += q[c];
            }
        }
    }
#pragma unroll
    for (int c = 0; c < 4; ++c) {
        sums[c][threadIdx.x] = s[c];
    }
    __syncthreads();
    for (u32 half = PIXELATE_THREADS / 2; half > 0; half /= 2) {
        if (threadIdx.x < half) {
#pragma unroll
            for (int c = 0; c < 4; ++c) {
                sums[c][threadIdx.x] += sums[c][threadIdx.x + half];
            }
        }
        __syncthreads();
    }
    if (threadIdx.x < 4) {
        mean[threadIdx.x] = (sums[threadIdx.x][0] + n / 2) / n;
    }
    __syncthreads();
    for (u32 k = threadIdx.x; k < n; k += blockDim.x) {
        u8* q = base + (size_t)(y0 + (int)(k / w)) * (size_t)pl.pitch
                + (size_t)(x0 + (int)(k % w)) * (size_t)pl.channels;
#pragma unroll
        for (int c = 0; c < 4; ++c) {
            if (c < pl.channels) {
                q[c] = (u8)mean[c];
            }
        }
    }
}

// Box filter of radius `r` at sample `i` of the `n` samples of a line (`step` bytes apart, edge
// samples repeated), channel by channel, into `out`: blur_line in paint.rs, whose running sum
// adds the same terms.
__device__ __forceinline__ void box_at(const u8* line, size_t step, int n, int i, int r,
                                       int channels, u8* out) {
    const u32 window = 2u * (u32)r + 1u;
    const int last = n - 1;
    int a = i - r;
    int b = i + r;
    u32 sum[4] = {0, 0, 0, 0};
    if (a < 0) {
#pragma unroll
        for (int c = 0; c < 4; ++c) {
            if (c < channels) {
                sum[c] += (u32)(-a) * line[c];
            }
        }
        a = 0;
    }
    if (b > last) {
#pragma unroll
        for (int c = 0; c < 4; ++c) {
            if (c < channels) {
                sum[c] += (u32)(b - last) * line[(size_t)last * step + c];
            }
        }
        b = last;
    }
    for (int k = a; k <= b; ++k) {
        const u8* q = line + (size_t)k * step;
#pragma unroll
        for (int c = 0; c < 4; ++c) {
            if (c < channels) {
                sum[c] += q[c];
            }
        }
    }
#pragma unroll
    for (int c = 0; c < 4; ++c) {
        if (c < channels) {
            out[c] = (u8)((sum[c] + window / 2u) / window);
        }
    }
}

// Horizontal pass: one thread per sample of every job, from the image into the job's scratch.
extern "C" __global__ void osd_blur_rows(struct BlurParams p) {
    const u32 item = blockIdx.x * blockDim.x + threadIdx.x;
    if (item >= p.items) {
        return;
    }
    const struct BlurJob* jobs = (const struct BlurJob*)p.jobs;
    const struct BlurJob job = jobs[find_job(jobs, p.count, item)];
    const struct Plane pl = p.planes[job.plane];
    const u32 w = (u32)(job.x1 - job.x0);
    const u32 local = item - job.start;
    const u32 row = local / w;
    const u32 col = local % w;
    const size_t step = (size_t)pl.channels;
    const u8* line = (const u8*)pl.ptr + (size_t)(job.y0 + (int)row) * (size_t)pl.pitch
                     + (size_t)job.x0 * step;
    u8* out = (u8*)p.scratch + job.scratch + (size_t)local * step;
    box_at(line, step, (int)w, (int)col, job.size, pl.channels, out);
}

// Vertical pass: one thread per sample of every job, from the job's scratch into the image.
extern "C" __global__ void osd_blur_cols(struct BlurParams p) {
    const u32 item = blockIdx.x * blockDim.x + threadIdx.x;
    if (item >= p.items) {
        return;
    }
    const struct BlurJob* jobs = (const struct BlurJob*)p.jobs;
    const struct BlurJob job = jobs[find_job(jobs, p.count, item)];
    const struct Plane pl = p.planes[job.plane];
    const u32 w = (u32)(job.x1 - job.x0);
    const u32 h = (u32)(job.y1 - job.y0);
    const u32 local = item - job.start;
    const u32 row = local / w;
    const u32 col = local % w;
    const size_t step = (size_t)pl.channels;
    const u8* line = (const u8*)p.scratch + job.scratch + (size_t)col * step;
    u8* out = (u8*)pl.ptr + (size_t)(job.y0 + (int)row) * (size_t)pl.pitch
              + (size_t)(job.x0 + (int)col) * step;
    box_at(line, (size_t)w * step, (int)h, (int)row, job.size, pl.channels, out);
}
