// SPDX-License-Identifier: MIT OR Apache-2.0
// A stand-in for libnvscibuf.so.1 and libnvscisync.so.1 (Jetson Linux, DRIVE OS), for testing
// Ferrostream's NvSci layer on machines without NvSci: the entry points Ferrostream calls, with
// the argument types and value sizes NVIDIA's nvscibuf.h / nvscisync.h give them, checked
// strictly, and a registry of live handles so a test can see that every handle is freed once.
// Built twice by tests/tests/nvsci.rs (once under each library name); each copy has its own state.
//
// Test-only entry points: fake_nvsci_live() (handles alive), fake_nvsci_bad_frees() (frees of
// handles that were not alive), fake_nvsci_fence_refs() (filled fences not cleared),
// fake_nvsci_fill_fence() (what a signaler such as CUDA does to a fence) and fake_nvsci_signal()
// (the signaler reaching the fence).

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef uint32_t NvSciError;
enum {
    Success = 0,
    NotPermitted = 0x21,
    InsufficientMemory = 0x30,
    BadParameter = 0x100,
    Timeout = 0x200,
    ReconciliationFailed = 0x10100,
};

// Buffer attribute keys and values (nvscibuf.h).
enum {
    KeyTypes = 1,
    KeyNeedCpuAccess = 2,
    KeyRequiredPerm = 3,
    KeyEnableCpuCache = 4,
    KeyGpuId = 5,
    KeyRawSize = 0x10000,
    KeyRawAlign = 0x10001,
};
// Sync attribute keys (nvscisync.h).
enum { SyncKeyNeedCpuAccess = 1, SyncKeyRequiredPerm = 2 };

typedef struct {
    uint32_t key;
    const void *value;
    size_t len;
} Pair;

// ---- live handles ------------------------------------------------------------------------------
#define MAX_LIVE 4096
static void *live[MAX_LIVE];
static int bad_frees;

static void *track(size_t size) {
    void *p = calloc(1, size);
    for (int i = 0; p && i < MAX_LIVE; i++) {
        if (!live[i]) {
            live[i] = p;
            return p;
        }
    }
    free(p);
    return NULL;
}

static bool alive(const void *p) {
    for (int i = 0; p && i < MAX_LIVE; i++) {
        if (live[i] == p) return true;
    }
    return false;
}

static void untrack(void *p) {
    for (int i = 0; p && i < MAX_LIVE; i++) {
        if (live[i] == p) {
            live[i] = NULL;
            free(p);
            return;
        }
    }
    bad_frees++;
}

int fake_nvsci_live(void) {
    int n = 0;
    for (int i = 0; i < MAX_LIVE; i++) n += live[i] != NULL;
    return n;
}

int fake_nvsci_bad_frees(void) { return bad_frees; }

// ---- NvSciBuf ----------------------------------------------------------------------------------
typedef struct {
    int module;
} BufModule;

typedef struct {
    BufModule *module;
    bool reconciled;
    uint32_t type;
    bool type_set, cpu_access;
    uint32_t perm;
    uint64_t size, align;
    int gpus;
} BufList;

typedef struct {
    uint64_t size;
    bool cpu_access;
    unsigned char *memory;
} BufObj;

NvSciError NvSciBufModuleOpen(BufModule **out) {
    if (!out) return BadParameter;
    *out = track(sizeof(BufModule));
    return *out ? Success : InsufficientMemory;
}

void NvSciBufModuleClose(BufModule *m) { untrack(m); }

NvSciError NvSciBufAttrListCreate(BufModule *m, BufList **out) {
    if (!alive(m) || !out) return BadParameter;
    BufList *l = track(sizeof(BufList));
    if (!l) return InsufficientMemory;
    l->module = m;
    *out = l;
    return Success;
}

void NvSciBufAttrListFree(BufList *l) { untrack(l); }

NvSciError NvSciBufAttrListSetAttrs(BufList *l, Pair *pairs, size_t count) {
    if (!alive(l) || l->reconciled || !pairs || count == 0) return BadParameter;
    for (size_t i = 0; i < count; i++) {
        const Pair *p = &pairs[i];
        if (!p->value) return BadParameter;
        switch (p->key) {
        case KeyTypes:  // an array of NvSciBufType (a 4-byte enum)
            if (p->len != 4) return BadParameter;
            memcpy(&l->type, p->value, 4);
            if (l->type > 5) return BadParameter;
            l->type_set = true;
            break;
        case KeyNeedCpuAccess:
        case KeyEnableCpuCache:  // bool
            if (p->len != sizeof(bool)) return BadParameter;
            if (p->key == KeyNeedCpuAccess) l->cpu_access = *(const bool *)p->value;
            break;
        case KeyRequiredPerm:  // NvSciBufAttrValAccessPerm (a 4-byte enum): 1 or 3
            if (p->len != 4) return BadParameter;
            memcpy(&l->perm, p->value, 4);
            if (l->perm != 1 && l->perm != 3) return BadParameter;
            break;
        case KeyGpuId:  // an array of NvSciRmGpuId (16 bytes each)
            if (p->len == 0 || p->len % 16) return BadParameter;
            l->gpus = (int)(p->len / 16);
            break;
        case KeyRawSize:  // uint64_t
        case KeyRawAlign:
            if (p->len != 8) return BadParameter;
            memcpy(p->key == KeyRawSize ? &l->size : &l->align, p->value, 8);
            if (p->key == KeyRawAlign && (l->align == 0 || (l->align & (l->align - 1))))
                return BadParameter;
            break;
        default:
            return BadParameter;
        }
    }
    return Success;
}

NvSciError NvSciBufAttrListGetAttrs(BufList *l, Pair *pairs, size_t count) {
    if (!alive(l) || !pairs) return BadParameter;
    for (size_t i = 0; i < count; i++) {
        if (pairs[i].key != KeyRawSize) return BadParameter;
        pairs[i].value = &l->size;
        pairs[i].len = 8;
    }
    return Success;
}

NvSciError NvSciBufAttrListReconcile(BufList *const inputs[], size_t count, BufList **out,
                                     BufList **conflicts) {
    if (!inputs || count == 0 || !out || !conflicts) return BadParameter;
    BufList merged = {0};
    merged.align = 1;
    bool sizes_differ = false;
    for (size_t i = 0; i < count; i++) {
        const BufList *l = inputs[i];
        if (!alive(l) || l->reconciled) return BadParameter;
        // nvscibuf.h: every list must come from the same module.
        if (i > 0 && l->module != inputs[0]->module) return BadParameter;
        if (l->type_set) merged.type = l->type, merged.type_set = true;
        merged.cpu_access |= l->cpu_access;
        // nvscibuf.h: raw-buffer sizes reconcile only when they match.
        if (l->size && merged.size && l->size != merged.size) sizes_differ = true;
        if (l->size) merged.size = l->size;
        merged.align = l->align > merged.align ? l->align : merged.align;
        merged.perm = l->perm > merged.perm ? l->perm : merged.perm;
        merged.module = l->module;
    }
    if (!merged.type_set || merged.type != 1 || merged.size == 0 || merged.perm == 0 ||
        sizes_differ) {
        NvSciBufAttrListCreate(merged.module, conflicts);
        return ReconciliationFailed;
    }
    BufList *r = track(sizeof(BufList));
    if (!r) return InsufficientMemory;
    *r = merged;
    r->reconciled = true;
    *out = r;
    return Success;
}

NvSciError NvSciBufObjAlloc(BufList *reconciled, BufObj **out) {
    if (!alive(reconciled) || !reconciled->reconciled || !out) return BadParameter;
    BufObj *o = track(sizeof(BufObj));
    if (!o) return InsufficientMemory;
    o->size = reconciled->size;
    o->cpu_access = reconciled->cpu_access;
    o->memory = calloc(1, reconciled->size);
    *out = o;
    return Success;
}

void NvSciBufObjFree(BufObj *o) {
    if (alive(o)) free(o->memory);
    untrack(o);
}

NvSciError NvSciBufObjGetCpuPtr(BufObj *o, void **ptr) {
    if (!alive(o) || !ptr) return BadParameter;
    if (!o->cpu_access) return NotPermitted;
    *ptr = o->memory;
    return Success;
}

// ---- NvSciSync ---------------------------------------------------------------------------------
typedef struct {
    int module;
} SyncModule;

typedef struct {
    SyncModule *module;
    bool reconciled, cpu;
    uint64_t perm;
} SyncList;

typedef struct {
    uint64_t signalled, next;
} SyncObj;

// Filled fences not cleared yet (each holds a reference to its object in NvSciSync).
static int fence_refs;

int fake_nvsci_fence_refs(void) { return fence_refs; }

typedef struct {
    SyncModule *module;
} WaitContext;

// NvSciSyncFence: 6 words; here [0] the object, [1] the value it reaches.
typedef struct {
    uint64_t payload[6];
} Fence;

NvSciError NvSciSyncModuleOpen(SyncModule **out) {
    if (!out) return BadParameter;
    *out = track(sizeof(SyncModule));
    return *out ? Success : InsufficientMemory;
}

void NvSciSyncModuleClose(SyncModule *m) { untrack(m); }

NvSciError NvSciSyncAttrListCreate(SyncModule *m, SyncList **out) {
    if (!alive(m) || !out) return BadParameter;
    SyncList *l = track(sizeof(SyncList));
    if (!l) return InsufficientMemory;
    l->module = m;
    *out = l;
    return Success;
}

void NvSciSyncAttrListFree(SyncList *l) { untrack(l); }

NvSciError NvSciSyncAttrListSetAttrs(SyncList *l, const Pair *pairs, size_t count) {
    if (!alive(l) || l->reconciled || !pairs || count == 0) return BadParameter;
    for (size_t i = 0; i < count; i++) {
        const Pair *p = &pairs[i];
        if (!p->value) return BadParameter;
        switch (p->key) {
        case SyncKeyNeedCpuAccess:  // bool
            if (p->len != sizeof(bool)) return BadParameter;
            l->cpu = *(const bool *)p->value;
            break;
        case SyncKeyRequiredPerm:  // NvSciSyncAccessPerm: a uint64_t, 1 to 3
            if (p->len != 8) return BadParameter;
            memcpy(&l->perm, p->value, 8);
            if (l->perm < 1 || l->perm > 3) return BadParameter;
            break;
        default:
            return BadParameter;
        }
    }
    return Success;
}

NvSciError NvSciSyncAttrListReconcile(SyncList *const inputs[], size_t count, SyncList **out,
                                      SyncList **conflicts) {
    if (!inputs || count == 0 || !out || !conflicts) return BadParameter;
    int signalers = 0, waiters = 0;
    for (size_t i = 0; i < count; i++) {
        if (!alive(inputs[i]) || inputs[i]->reconciled) return BadParameter;
        signalers += (inputs[i]->perm & 2) != 0;
        waiters += (inputs[i]->perm & 1) != 0;
    }
    // NvSciSync: exactly one signaler and at least one waiter.
    if (signalers != 1 || waiters == 0) {
        NvSciSyncAttrListCreate(inputs[0]->module, conflicts);
        return ReconciliationFailed;
    }
    SyncList *r = track(sizeof(SyncList));
    if (!r) return InsufficientMemory;
    r->module = inputs[0]->module;
    r->reconciled = true;
    *out = r;
    return Success;
}

NvSciError NvSciSyncObjAlloc(SyncList *reconciled, SyncObj **out) {
    if (!alive(reconciled) || !reconciled->reconciled || !out) return BadParameter;
    *out = track(sizeof(SyncObj));
    return *out ? Success : InsufficientMemory;
}

void NvSciSyncObjFree(SyncObj *o) { untrack(o); }

void NvSciSyncFenceClear(Fence *f) {
    if (!f) return;
    if (f->payload[0]) fence_refs--;
    memset(f, 0, sizeof *f);
}

NvSciError NvSciSyncCpuWaitContextAlloc(SyncModule *m, WaitContext **out) {
    if (!alive(m) || !out) return BadParameter;
    WaitContext *c = track(sizeof(WaitContext));
    if (!c) return InsufficientMemory;
    c->module = m;
    *out = c;
    return Success;
}

void NvSciSyncCpuWaitContextFree(WaitContext *c) { untrack(c); }

NvSciError NvSciSyncFenceWait(const Fence *f, WaitContext *c, int64_t timeout_us) {
    if (!f || !alive(c) || timeout_us < -1) return BadParameter;
    const SyncObj *o = (const SyncObj *)(uintptr_t)f->payload[0];
    if (!o) return Success;  // a cleared fence
    if (!alive(o)) return BadParameter;
    return o->signalled >= f->payload[1] ? Success : Timeout;
}

// What a signaler (CUDA, cuDLA) does: fills `f` with the object's next value.
NvSciError fake_nvsci_fill_fence(SyncObj *o, Fence *f) {
    if (!alive(o) || !f) return BadParameter;
    NvSciSyncFenceClear(f);
    f->payload[0] = (uint64_t)(uintptr_t)o;
    f->payload[1] = ++o->next;
    fence_refs++;
    return Success;
}

// The signaler reaches every value it promised.
void fake_nvsci_signal(SyncObj *o) {
    if (alive(o)) o->signalled = o->next;
}
