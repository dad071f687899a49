// SPDX-License-Identifier: GPL-2.0-or-later
//
// osmeter-trace: a QEMU TCG plugin that streams every instruction fetch and data access of an
// x86-64 guest, between two marker instructions the guest executes, to a file descriptor that
// osmeter reads. Licensed apart from the osmeter crate (see qemu-plugin/README.md).
//
// Plugin arguments: fd=N (descriptor to write to, inherited from osmeter),
//                   ram=BYTES (size of the memfd memory backend holding guest RAM),
//                   mode=trace (the default: the record stream below), mode=windows or
//                   mode=count.
//
// Windows mode: the record stream of every window the guest opens and closes, not only the
// first; boot runs at nearly full speed up to the first window (only markers and CR3 loads are
// watched), and the stream ends when QEMU exits.
//
// Count mode: instructions, loads and stores, user and kernel apart, are counted from boot with
// inline additions (no call per instruction), and at every marker the plugin writes one text line
// of the running totals: "mark CODE UI KI UL KL US KS\n" (U user, K kernel; I instructions,
// L loads, S stores). osmeter subtracts the totals of two markers to get a window's counts, so
// the guest may open and close as many windows as it likes.
//
// Stream: 16-byte little-endian records, written in large blocks.
//   word 0: virtual address (or a control payload)
//   word 1: bits 0-51 physical address, 52-56 size-1, 57-58 kind (0 fetch, 1 read, 2 write,
//           3 control), 59 kernel mode, 60 device (uncached) access, 61 physical address unknown.
// Control records carry their code in bits 0-7 of word 1:
//   1 start marker, 2 end marker, 3 CR3 load (word 0: its ordinal), 4 end of stream (word 0:
//   records written before it).

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

// The part of QEMU's plugin API (version 1, QEMU 6.0 to 8.1) that this plugin uses. QEMU resolves
// these from its own executable when it loads the plugin.
typedef uint64_t qemu_plugin_id_t;
typedef uint32_t qemu_plugin_meminfo_t;
typedef struct qemu_info_t qemu_info_t;
struct qemu_plugin_tb;
struct qemu_plugin_insn;
struct qemu_plugin_hwaddr;
enum qemu_plugin_cb_flags { PLUGIN_CB_NO_REGS = 0 };
enum qemu_plugin_mem_rw { PLUGIN_MEM_R = 1, PLUGIN_MEM_W = 2, PLUGIN_MEM_RW = 3 };

typedef void (*tb_trans_cb)(qemu_plugin_id_t, struct qemu_plugin_tb *);
typedef void (*insn_exec_cb)(unsigned int vcpu, void *userdata);
typedef void (*mem_cb)(unsigned int vcpu, qemu_plugin_meminfo_t info, uint64_t vaddr,
                       void *userdata);
typedef void (*id_udata_cb)(qemu_plugin_id_t, void *userdata);
typedef void (*id_cb)(qemu_plugin_id_t);

extern void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t, tb_trans_cb);
extern size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *);
extern struct qemu_plugin_insn *qemu_plugin_tb_get_insn(const struct qemu_plugin_tb *, size_t);
extern const void *qemu_plugin_insn_data(const struct qemu_plugin_insn *);
extern size_t qemu_plugin_insn_size(const struct qemu_plugin_insn *);
extern uint64_t qemu_plugin_insn_vaddr(const struct qemu_plugin_insn *);
extern void *qemu_plugin_insn_haddr(const struct qemu_plugin_insn *);
extern void qemu_plugin_register_vcpu_insn_exec_cb(struct qemu_plugin_insn *, insn_exec_cb,
                                                   enum qemu_plugin_cb_flags, void *);
extern void qemu_plugin_register_vcpu_mem_cb(struct qemu_plugin_insn *, mem_cb,
                                             enum qemu_plugin_cb_flags, enum qemu_plugin_mem_rw,
                                             void *);
extern unsigned int qemu_plugin_mem_size_shift(qemu_plugin_meminfo_t);
extern bool qemu_plugin_mem_is_store(qemu_plugin_meminfo_t);
extern struct qemu_plugin_hwaddr *qemu_plugin_get_hwaddr(qemu_plugin_meminfo_t, uint64_t);
extern bool qemu_plugin_hwaddr_is_io(const struct qemu_plugin_hwaddr *);
extern uint64_t qemu_plugin_hwaddr_phys_addr(const struct qemu_plugin_hwaddr *);
extern void qemu_plugin_register_atexit_cb(qemu_plugin_id_t, id_udata_cb, void *);
extern void qemu_plugin_reset(qemu_plugin_id_t, id_cb);
extern void qemu_plugin_outs(const char *);
enum qemu_plugin_op { QEMU_PLUGIN_INLINE_ADD_U64 = 0 };
extern void qemu_plugin_register_vcpu_insn_exec_inline(struct qemu_plugin_insn *,
                                                       enum qemu_plugin_op, void *, uint64_t);
extern void qemu_plugin_register_vcpu_mem_inline(struct qemu_plugin_insn *,
                                                 enum qemu_plugin_mem_rw, enum qemu_plugin_op,
                                                 void *, uint64_t);

__attribute__((visibility("default"))) int qemu_plugin_version = 1;

#define PADDR_MASK ((1ULL << 52) - 1)
#define SIZE_SHIFT 52
#define KIND_SHIFT 57
#define KERNEL_BIT (1ULL << 59)
#define DEVICE_BIT (1ULL << 60)
#define NOPHYS_BIT (1ULL << 61)
enum { KIND_FETCH = 0, KIND_READ = 1, KIND_WRITE = 2, KIND_CONTROL = 3 };
enum { CTL_START = 1, CTL_END = 2, CTL_CR3 = 3, CTL_EOS = 4 };

// The guest's markers: `nopl 0x??4d534f(%rax)`, a 7-byte no-op whose displacement spells "OSM"
// and a code byte; nothing else in a kernel or program encodes that displacement by chance.
static const uint8_t MARKER[6] = {0x0f, 0x1f, 0x80, 'O', 'S', 'M'};
enum { MARK_START = 1, MARK_END = 2 };

// Per instruction, made at translation and kept for the life of the translation cache. Never
// freed: a flush is rare and the guest's code is small.
struct insn_info {
    uint64_t vaddr;
    uint64_t word; // physical address, size, kind fetch, mode, unknown-physical bit
};

static qemu_plugin_id_t plugin_id;
static int out_fd = -1;
static uintptr_t ram_bytes;
static uintptr_t ram_base;
static bool ram_known, ram_searched;
static bool tracing;
static bool finished;
static bool every_window;
static bool reset_done;
static uint64_t cr3_loads;
static uint64_t written;

#define BUF_RECORDS (1 << 16)
static uint64_t buf[2 * BUF_RECORDS];
static size_t buf_used; // in records

static void flush_buf(void)
{
    const char *p = (const char *)buf;
    size_t left = buf_used * 16;
    while (left > 0 && out_fd >= 0) {
        ssize_t n = write(out_fd, p, left);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            // osmeter went away: stop tracing rather than stall the guest.
            qemu_plugin_outs("osmeter-trace: the trace reader is gone; tracing stops\n");
            close(out_fd);
            out_fd = -1;
            tracing = false;
            break;
        }
        p += n;
        left -= (size_t)n;
    }
    buf_used = 0;
}

static inline void emit(uint64_t a, uint64_t b)
{
    buf[2 * buf_used] = a;
    buf[2 * buf_used + 1] = b;
    written++;
    if (++buf_used == BUF_RECORDS)
        flush_buf();
}

static void emit_control(int code, uint64_t payload)
{
    emit(payload, ((uint64_t)KIND_CONTROL << KIND_SHIFT) | (uint64_t)code);
}

// Guest RAM lives in a memfd that QEMU maps once; its place in our address space turns the host
// pointer of an instruction's bytes into a guest physical address (the guest has less RAM than
// the PCI hole, so RAM is one linear block from physical 0). The mapping is the memfd of exactly
// the RAM's size; QEMU versions differ in how they name it.
static void find_ram(void)
{
    ram_searched = true;
    FILE *maps = fopen("/proc/self/maps", "r");
    if (!maps)
        return;
    char line[512];
    while (fgets(line, sizeof line, maps)) {
        unsigned long lo, hi;
        if (sscanf(line, "%lx-%lx", &lo, &hi) == 2 && strstr(line, "/memfd:") &&
            hi - lo == ram_bytes) {
            ram_base = lo;
            ram_known = true;
        }
    }
    fclose(maps);
    if (!ram_known)
        qemu_plugin_outs("osmeter-trace: guest RAM not found; fetches carry no physical address\n");
}

static void on_fetch(unsigned int vcpu, void *userdata)
{
    (void)vcpu;
    if (!tracing)
        return;
    const struct insn_info *ii = userdata;
    emit(ii->vaddr, ii->word);
}

static void on_mem(unsigned int vcpu, qemu_plugin_meminfo_t info, uint64_t vaddr, void *userdata)
{
    (void)vcpu;
    if (!tracing)
        return;
    const struct insn_info *ii = userdata;
    uint64_t size = 1ULL << qemu_plugin_mem_size_shift(info);
    uint64_t kind = qemu_plugin_mem_is_store(info) ? KIND_WRITE : KIND_READ;
    uint64_t word = ((size - 1) << SIZE_SHIFT) | (kind << KIND_SHIFT) | (ii->word & KERNEL_BIT);
    struct qemu_plugin_hwaddr *hw = qemu_plugin_get_hwaddr(info, vaddr);
    if (hw) {
        word |= qemu_plugin_hwaddr_phys_addr(hw) & PADDR_MASK;
        if (qemu_plugin_hwaddr_is_io(hw))
            word |= DEVICE_BIT;
    } else {
        word |= NOPHYS_BIT;
    }
    emit(vaddr, word);
}

static void on_cr3_load(unsigned int vcpu, void *userdata)
{
    (void)vcpu;
    (void)userdata;
    cr3_loads++;
    if (tracing)
        emit_control(CTL_CR3, cr3_loads);
}

static void finish_stream(void)
{
    if (finished)
        return;
    finished = true;
    tracing = false;
    emit_control(CTL_EOS, written);
    flush_buf();
    if (out_fd >= 0)
        close(out_fd);
    out_fd = -1;
}

static void translate_full(qemu_plugin_id_t id, struct qemu_plugin_tb *tb);
static void translate_armed(qemu_plugin_id_t id, struct qemu_plugin_tb *tb);

static void at_exit(qemu_plugin_id_t id, void *userdata);

// A reset drops every callback of the plugin, the exit hook included; these put back what the
// next phase needs.
static void after_reset_full(qemu_plugin_id_t id)
{
    qemu_plugin_register_vcpu_tb_trans_cb(id, translate_full);
    qemu_plugin_register_atexit_cb(id, at_exit, NULL);
}

static void after_reset_quiet(qemu_plugin_id_t id)
{
    // Nothing more to trace: the guest shuts down at full speed.
    qemu_plugin_register_atexit_cb(id, at_exit, NULL);
}

static void on_marker(unsigned int vcpu, void *userdata)
{
    (void)vcpu;
    uintptr_t code = (uintptr_t)userdata;
    if (code == MARK_START && !tracing && !finished) {
        tracing = true;
        emit_control(CTL_START, cr3_loads);
        // Retranslate everything with full instrumentation; until the flush takes effect the
        // rest of this block is already instrumented (see translate_armed). In windows mode
        // this happens once: QEMU 7.2 keeps a pointer to the memory callbacks of the block an
        // exception left, and a flush under a later window would leave it dangling, so the
        // instrumentation stays and `tracing` alone says whether a reference is recorded.
        if (!reset_done)
            qemu_plugin_reset(plugin_id, after_reset_full);
        reset_done = every_window;
    } else if (code == MARK_END && tracing && every_window) {
        emit_control(CTL_END, cr3_loads);
        tracing = false;
        // The reader sees each window as soon as it closes.
        flush_buf();
    } else if (code == MARK_END && tracing) {
        emit_control(CTL_END, cr3_loads);
        finish_stream();
        qemu_plugin_reset(plugin_id, after_reset_quiet);
    }
}

static int marker_code(const struct qemu_plugin_insn *insn)
{
    if (qemu_plugin_insn_size(insn) != 7)
        return 0;
    const uint8_t *b = qemu_plugin_insn_data(insn);
    if (memcmp(b, MARKER, sizeof MARKER) != 0)
        return 0;
    return b[6] == MARK_START || b[6] == MARK_END ? b[6] : 0;
}

// mov %reg, %cr3: 0f 22 with a register-form ModRM whose reg field is 3, maybe after a REX byte.
static bool is_cr3_load(const struct qemu_plugin_insn *insn)
{
    size_t n = qemu_plugin_insn_size(insn);
    const uint8_t *b = qemu_plugin_insn_data(insn);
    if (n >= 1 && (b[0] & 0xf0) == 0x40) {
        b++;
        n--;
    }
    return n == 3 && b[0] == 0x0f && b[1] == 0x22 && (b[2] & 0xc0) == 0xc0 &&
           ((b[2] >> 3) & 7) == 3;
}

static void instrument(struct qemu_plugin_insn *insn)
{
    if (!ram_searched)
        find_ram();
    struct insn_info *ii = malloc(sizeof *ii);
    if (!ii)
        abort();
    uint64_t vaddr = qemu_plugin_insn_vaddr(insn);
    uint64_t size = qemu_plugin_insn_size(insn);
    uint64_t word = ((size - 1) << SIZE_SHIFT) | ((uint64_t)KIND_FETCH << KIND_SHIFT);
    if (vaddr >> 63)
        word |= KERNEL_BIT;
    uintptr_t host = (uintptr_t)qemu_plugin_insn_haddr(insn);
    if (ram_known && host >= ram_base && host - ram_base < ram_bytes)
        word |= (uint64_t)(host - ram_base) & PADDR_MASK;
    else
        word |= NOPHYS_BIT;
    ii->vaddr = vaddr;
    ii->word = word;
    qemu_plugin_register_vcpu_insn_exec_cb(insn, on_fetch, PLUGIN_CB_NO_REGS, ii);
    qemu_plugin_register_vcpu_mem_cb(insn, on_mem, PLUGIN_CB_NO_REGS, PLUGIN_MEM_RW, ii);
}

static void watch_special(struct qemu_plugin_insn *insn)
{
    int code = marker_code(insn);
    if (code)
        qemu_plugin_register_vcpu_insn_exec_cb(insn, on_marker, PLUGIN_CB_NO_REGS,
                                               (void *)(uintptr_t)code);
    else if (is_cr3_load(insn))
        qemu_plugin_register_vcpu_insn_exec_cb(insn, on_cr3_load, PLUGIN_CB_NO_REGS, NULL);
}

static void translate_full(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
    (void)id;
    size_t n = qemu_plugin_tb_n_insns(tb);
    for (size_t i = 0; i < n; i++) {
        struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
        // The fetch is recorded before a marker acts, so the end marker itself is in the trace
        // and the start marker is not.
        instrument(insn);
        watch_special(insn);
    }
}

// Before the start marker only markers and CR3 loads are watched, so boot runs at nearly full
// speed. A block holding the start marker is instrumented in full after it.
static void translate_armed(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
    (void)id;
    size_t n = qemu_plugin_tb_n_insns(tb);
    bool after_start = false;
    for (size_t i = 0; i < n; i++) {
        struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
        if (after_start)
            instrument(insn);
        watch_special(insn);
        if (marker_code(insn) == MARK_START)
            after_start = true;
    }
}

static void at_exit(qemu_plugin_id_t id, void *userdata)
{
    (void)id;
    (void)userdata;
    // A guest that never reached the end marker: what was traced is still delivered, and the
    // missing end marker tells osmeter the trace is incomplete.
    finish_stream();
}

// Count mode. One vCPU, so plain totals; index 0 user, 1 kernel.
static uint64_t count_insns[2], count_loads[2], count_stores[2];

static void on_count_marker(unsigned int vcpu, void *userdata)
{
    (void)vcpu;
    char line[256];
    int n = snprintf(line, sizeof line, "mark %d %llu %llu %llu %llu %llu %llu\n",
                     (int)(uintptr_t)userdata, (unsigned long long)count_insns[0],
                     (unsigned long long)count_insns[1], (unsigned long long)count_loads[0],
                     (unsigned long long)count_loads[1], (unsigned long long)count_stores[0],
                     (unsigned long long)count_stores[1]);
    const char *p = line;
    while (n > 0 && out_fd >= 0) {
        ssize_t w = write(out_fd, p, (size_t)n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0) {
            close(out_fd);
            out_fd = -1;
            break;
        }
        p += w;
        n -= (int)w;
    }
}

static void translate_count(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
    (void)id;
    size_t n = qemu_plugin_tb_n_insns(tb);
    for (size_t i = 0; i < n; i++) {
        struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
        int mode = qemu_plugin_insn_vaddr(insn) >> 63 ? 1 : 0;
        qemu_plugin_register_vcpu_insn_exec_inline(insn, QEMU_PLUGIN_INLINE_ADD_U64,
                                                   &count_insns[mode], 1);
        qemu_plugin_register_vcpu_mem_inline(insn, PLUGIN_MEM_R, QEMU_PLUGIN_INLINE_ADD_U64,
                                             &count_loads[mode], 1);
        qemu_plugin_register_vcpu_mem_inline(insn, PLUGIN_MEM_W, QEMU_PLUGIN_INLINE_ADD_U64,
                                             &count_stores[mode], 1);
        int code = marker_code(insn);
        if (code)
            qemu_plugin_register_vcpu_insn_exec_cb(insn, on_count_marker, PLUGIN_CB_NO_REGS,
                                                   (void *)(uintptr_t)code);
    }
}

static void at_exit_count(qemu_plugin_id_t id, void *userdata)
{
    (void)id;
    (void)userdata;
    if (out_fd >= 0)
        close(out_fd);
    out_fd = -1;
}

__attribute__((visibility("default"))) int qemu_plugin_install(qemu_plugin_id_t id,
                                                              const qemu_info_t *info, int argc,
                                                              char **argv)
{
    (void)info;
    plugin_id = id;
    bool count = false;
    for (int i = 0; i < argc; i++) {
        if (strncmp(argv[i], "fd=", 3) == 0) {
            out_fd = atoi(argv[i] + 3);
        } else if (strncmp(argv[i], "ram=", 4) == 0) {
            ram_bytes = (uintptr_t)strtoull(argv[i] + 4, NULL, 0);
        } else if (strcmp(argv[i], "mode=count") == 0) {
            count = true;
        } else if (strcmp(argv[i], "mode=trace") == 0) {
            count = false;
        } else if (strcmp(argv[i], "mode=windows") == 0) {
            count = false;
            every_window = true;
        } else {
            fprintf(stderr, "osmeter-trace: unknown argument %s (expected fd=N, ram=BYTES, mode=trace|windows|count)\n",
                    argv[i]);
            return -1;
        }
    }
    if (out_fd < 0) {
        fprintf(stderr, "osmeter-trace: no output descriptor (fd=N)\n");
        return -1;
    }
    if (count) {
        qemu_plugin_register_vcpu_tb_trans_cb(id, translate_count);
        qemu_plugin_register_atexit_cb(id, at_exit_count, NULL);
        return 0;
    }
    qemu_plugin_register_vcpu_tb_trans_cb(id, translate_armed);
    qemu_plugin_register_atexit_cb(id, at_exit, NULL);
    return 0;
}
