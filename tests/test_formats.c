/* test_formats.c — llm.c model files and token shards against their specification (header
 * words, tensor order, sizes): round trips, stage slices, and one clear error for each kind of
 * damage; the data loader's sequential and shuffled windows; `axonn prep` (and that a failed
 * prep leaves no shard behind); mapped files, the streaming copy, and a checkpoint stage file
 * filled into memory against the written one; the CRC-32. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "models/gpt_config.h"
#include "models/gpt_init.h"
#include "src/cli/commands.h"
#include "src/core/crc32.h"
#include "src/core/crc32c.h"
#include "src/core/error.h"
#include "src/core/fileio.h"
#include "src/core/log.h"
#include "src/core/stream_copy.h"
#include "src/io/checkpoint.h"
#include "src/io/ckpt_blob.h"
#include "src/core/rng.h"
#include "src/io/dataloader.h"
#include "src/io/markov.h"
#include "src/io/model_file.h"
#include "src/io/shard.h"
#include "testutil.h"

static const AxGptConfig CFG = {.max_seq = 8, .vocab = 10, .padded_vocab = 16, .layers = 3,
                                .heads = 2, .channels = 4};

static float *whole_model(void) {
  AxStageLayout all;
  ax_stage_layout(&all, &CFG, 0, CFG.layers, 1, 1);
  float *p = tu_alloc(all.total * sizeof *p);
  for (size_t i = 0; i < all.total; i++) p[i] = (float)i * 0.5f; /* position-coded values */
  return p;
}

static void write_bytes(const char *path, const void *data, size_t n) {
  FILE *f = fopen(path, "wb");
  ck_assert_ptr_nonnull(f);
  ck_assert_uint_eq(fwrite(data, 1, n, f), n);
  fclose(f);
}

static void *read_bytes(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  ck_assert_ptr_nonnull(f);
  fseek(f, 0, SEEK_END);
  *n = (size_t)ftell(f);
  fseek(f, 0, SEEK_SET);
  void *d = tu_alloc(*n);
  ck_assert_uint_eq(fread(d, 1, *n, f), *n);
  fclose(f);
  return d;
}

static void expect_error(int rc, const char *needle) {
  ck_assert_int_eq(rc, AX_ERR);
  ck_assert_msg(strstr(ax_error_text(), needle) != NULL, "error '%s' lacks '%s'",
                ax_error_text(), needle);
  ax_error_clear();
}

START_TEST(model_file_layout_follows_spec) {
  float *p = whole_model();
  const char *path = tu_path("m.bin");
  ck_assert_int_eq(ax_model_file_write(path, &CFG, p), AX_OK);
  size_t n;
  int32_t *raw = read_bytes(path, &n);
  ck_assert_int_eq(raw[0], 20240326);
  ck_assert_int_eq(raw[1], 3);
  ck_assert_int_eq(raw[2], 8); ck_assert_int_eq(raw[3], 10); ck_assert_int_eq(raw[4], 3);
  ck_assert_int_eq(raw[5], 2); ck_assert_int_eq(raw[6], 4); ck_assert_int_eq(raw[7], 16);
  /* tensor sizes in file order: wte Vp*C, wpe maxT*C, ln1w L*C, ln1b, qkvw L*3C*C, ... */
  size_t C = 4, L = 3, expect = 16 * C + 8 * C + L * C * 2 + L * 3 * C * C + L * 3 * C + L * C * C +
                                 L * C + L * C * 2 + L * 4 * C * C + L * 4 * C + L * C * 4 * C +
                                 L * C + C * 2;
  ck_assert_uint_eq(n, 1024 + expect * 4);
  ck_assert_uint_eq(ax_gpt_num_params(&CFG), expect);
  const float *body = (const float *)(raw + 256);
  for (size_t i = 0; i < expect; i++) ck_assert_float_eq(body[i], (float)i * 0.5f);
  AxGptConfig got;
  ck_assert_int_eq(ax_model_file_read_config(path, &got), AX_OK);
  ck_assert_mem_eq(&got, &CFG, sizeof got);
}
END_TEST

/* Stage slices read from a whole file and written back from two stages give the same bytes. */
START_TEST(model_file_stage_slices_round_trip) {
  float *p = whole_model();
  const char *path = tu_path("m.bin");
  ck_assert_int_eq(ax_model_file_write(path, &CFG, p), AX_OK);
  AxStageLayout s[2];
  ax_stage_layout(&s[0], &CFG, 0, 2, 1, 0);
  ax_stage_layout(&s[1], &CFG, 2, 3, 0, 1);
  ck_assert(s[0].has[AX_P_WTE] && s[1].has[AX_P_WTE]); /* tied head: both ends hold wte */
  ck_assert(!s[1].has[AX_P_WPE] && !s[0].has[AX_P_LNFW]);
  float *a = tu_alloc(s[0].total * 4), *b = tu_alloc(s[1].total * 4);
  ck_assert_int_eq(ax_model_file_read_stage(path, &CFG, &s[0], a), AX_OK);
  ck_assert_int_eq(ax_model_file_read_stage(path, &CFG, &s[1], b), AX_OK);
  /* stage 1 holds block 2 of qkvw: the elements after two blocks' worth */
  size_t per = ax_param_per_layer(&CFG, AX_P_QKVW);
  ck_assert_float_eq(b[s[1].offset[AX_P_QKVW]], p[s[1].file_offset[AX_P_QKVW]]);
  ck_assert_uint_eq(s[1].file_offset[AX_P_QKVW] - s[0].file_offset[AX_P_QKVW], 2 * per);
  const char *path2 = tu_path("m2.bin");
  const float *pieces[2] = {a, b};
  ck_assert_int_eq(ax_model_file_write_stages(path2, &CFG, s, pieces, 2), AX_OK);
  size_t n1, n2;
  void *d1 = read_bytes(path, &n1), *d2 = read_bytes(path2, &n2);
  ck_assert_uint_eq(n1, n2);
  ck_assert_mem_eq(d1, d2, n1);
}
END_TEST

START_TEST(model_file_damage_is_reported) {
  float *p = whole_model();
  const char *path = tu_path("m.bin");
  ck_assert_int_eq(ax_model_file_write(path, &CFG, p), AX_OK);
  size_t n;
  unsigned char *raw = read_bytes(path, &n);
  AxGptConfig got;
  const char *bad = tu_path("bad.bin");
  int32_t *h = (int32_t *)raw;
  h[0] = 12345;
  write_bytes(bad, raw, n);
  expect_error(ax_model_file_read_config(bad, &got), "bad magic 12345");
  h[0] = 20240326, h[1] = 5;
  write_bytes(bad, raw, n);
  expect_error(ax_model_file_read_config(bad, &got), "version 5 is not supported");
  h[1] = 3;
  write_bytes(bad, raw, n - 7); /* truncated */
  expect_error(ax_model_file_read_config(bad, &got), "size mismatch");
  write_bytes(bad, raw, 100); /* shorter than the header */
  expect_error(ax_model_file_read_config(bad, &got), "truncated");
  h[4] = 4; /* header claims more layers than the file holds */
  write_bytes(bad, raw, n);
  expect_error(ax_model_file_read_config(bad, &got), "size mismatch");
  h[4] = 3, h[6] = 5; /* C not divisible by NH */
  write_bytes(bad, raw, n);
  expect_error(ax_model_file_read_config(bad, &got), "not divisible");
  expect_error(ax_model_file_read_config(tu_path("absent.bin"), &got), "cannot open");
}
END_TEST

START_TEST(shard_round_trip_and_damage) {
  uint16_t tok[100];
  for (int i = 0; i < 100; i++) tok[i] = (uint16_t)(i * 3);
  const char *path = tu_path("s.bin");
  ck_assert_int_eq(ax_shard_write(path, tok, 100), AX_OK);
  size_t n;
  int32_t *raw = read_bytes(path, &n);
  ck_assert_uint_eq(n, 1024 + 200);
  ck_assert_int_eq(raw[0], 20240520); ck_assert_int_eq(raw[1], 1); ck_assert_int_eq(raw[2], 100);
  AxShard s;
  ck_assert_int_eq(ax_shard_open(&s, path), AX_OK);
  ck_assert_uint_eq(s.n, 100);
  ck_assert_mem_eq(s.tokens, tok, sizeof tok);
  ax_shard_close(&s);
  const char *bad = tu_path("bad.bin");
  raw[0] = 7;
  write_bytes(bad, raw, n);
  expect_error(ax_shard_open(&s, bad), "bad magic 7");
  raw[0] = 20240520;
  write_bytes(bad, raw, n - 2);
  expect_error(ax_shard_open(&s, bad), "size mismatch");
  write_bytes(bad, raw, 10);
  expect_error(ax_shard_open(&s, bad), "truncated");
  raw[1] = 2;
  write_bytes(bad, raw, n);
  expect_error(ax_shard_open(&s, bad), "version 2");
}
END_TEST

static void make_shard(const char *name, int n, int base) {
  uint16_t *tok = tu_alloc((size_t)n * 2);
  for (int i = 0; i < n; i++) tok[i] = (uint16_t)(base + i);
  ck_assert_int_eq(ax_shard_write(tu_path(name), tok, (size_t)n), AX_OK);
}

START_TEST(loader_sequential_windows_wrap) {
  make_shard("seq.bin", 25, 0); /* B*T = 2*3 = 6: windows start at 0, 6, 12, 18 */
  AxLoader L;
  ck_assert_int_eq(ax_loader_open(&L, tu_path("seq.bin"), 2, 3, 100, 0, 1), AX_OK);
  ck_assert_uint_eq(ax_loader_windows(&L), 4);
  int32_t in[6], tg[6];
  for (int step = 0; step < 6; step++) {
    ck_assert_int_eq(ax_loader_next(&L, 0, 2, in, tg), AX_OK);
    int start = (step % 4) * 6; /* wraps after the last full window */
    for (int i = 0; i < 6; i++) {
      ck_assert_int_eq(in[i], start + i);
      ck_assert_int_eq(tg[i], start + i + 1);
    }
  }
  /* a data-parallel rank takes sequence 1 only */
  ax_loader_set_position(&L, 1);
  ck_assert_int_eq(ax_loader_next(&L, 1, 1, in, tg), AX_OK);
  ck_assert_int_eq(in[0], 9); ck_assert_int_eq(tg[2], 12);
  ax_loader_close(&L);
}
END_TEST

START_TEST(loader_shuffle_visits_each_window_once) {
  make_shard("shuf_a.bin", 61, 0);    /* 10 windows of 6 */
  make_shard("shuf_b.bin", 31, 1000); /* 5 windows */
  AxLoader L;
  ck_assert_int_eq(ax_loader_open(&L, tu_path("shuf_?.bin"), 2, 3, 2000, 1, 42), AX_OK);
  ck_assert_int_eq(L.n_shards, 2);
  ck_assert_uint_eq(ax_loader_windows(&L), 15);
  int32_t in[6], tg[6];
  int seen[2][15] = {{0}}, order[2][15];
  for (int epoch = 0; epoch < 2; epoch++)
    for (int i = 0; i < 15; i++) {
      ck_assert_int_eq(ax_loader_next(&L, 0, 2, in, tg), AX_OK);
      int w = in[0] >= 1000 ? 10 + (in[0] - 1000) / 6 : in[0] / 6;
      seen[epoch][w]++;
      order[epoch][i] = w;
    }
  for (int e = 0; e < 2; e++)
    for (int w = 0; w < 15; w++) ck_assert_int_eq(seen[e][w], 1);
  ck_assert_msg(memcmp(order[0], order[1], sizeof order[0]) != 0, "epochs repeat one order");
  int sequential = 1;
  for (int i = 0; i < 15; i++) sequential &= order[0][i] == i;
  ck_assert_msg(!sequential, "shuffle 1 gave the sequential order");
  ax_loader_close(&L);
}
END_TEST

START_TEST(loader_errors) {
  make_shard("small.bin", 6, 0);
  AxLoader L;
  expect_error(ax_loader_open(&L, tu_path("small.bin"), 2, 3, 100, 0, 1), "fewer than one batch");
  expect_error(ax_loader_open(&L, tu_path("nothing-*.bin"), 2, 3, 100, 0, 1), "no token shard");
  make_shard("big.bin", 20, 250);
  ck_assert_int_eq(ax_loader_open(&L, tu_path("big.bin"), 2, 3, 256, 0, 1), AX_OK);
  int32_t in[6], tg[6];
  expect_error(ax_loader_next(&L, 0, 2, in, tg), "outside the vocabulary");
  ax_loader_close(&L);
}
END_TEST

START_TEST(prep_splits_bytes) {
  const char *txt = tu_path("in.txt");
  char text[1000];
  for (int i = 0; i < 1000; i++) text[i] = (char)('a' + i % 26);
  write_bytes(txt, text, sizeof text);
  char prefix[600];
  snprintf(prefix, sizeof prefix, "%s", tu_path("out"));
  char *argv[] = {"prep", "--input", (char *)txt, "--output", prefix, NULL};
  ax_log_set_quiet(1);
  ck_assert_int_eq(ax_cmd_prep(5, argv), 0);
  char path[700];
  AxShard s;
  snprintf(path, sizeof path, "%s_train.bin", prefix);
  ck_assert_int_eq(ax_shard_open(&s, path), AX_OK);
  ck_assert_uint_eq(s.n, 900);
  for (int i = 0; i < 900; i++) ck_assert_uint_eq(s.tokens[i], (unsigned char)text[i]);
  ax_shard_close(&s);
  snprintf(path, sizeof path, "%s_val.bin", prefix);
  ck_assert_int_eq(ax_shard_open(&s, path), AX_OK);
  ck_assert_uint_eq(s.n, 100);
  ck_assert_uint_eq(s.tokens[0], (unsigned char)text[900]);
  ax_shard_close(&s);
}
END_TEST

/* A failure writing the validation shard (here its name is taken by a directory) leaves no
 * training shard behind either. */
START_TEST(prep_leaves_nothing_when_a_shard_fails) {
  const char *txt = tu_path("in2.txt");
  write_bytes(txt, "some text to split into two shards", 34);
  char prefix[600], path[700];
  snprintf(prefix, sizeof prefix, "%s", tu_path("fail"));
  snprintf(path, sizeof path, "%s_val.bin", prefix);
  ck_assert_int_eq(mkdir(path, 0755), 0);
  char *argv[] = {"prep", "--input", (char *)txt, "--output", prefix, NULL};
  ax_log_set_quiet(1);
  ck_assert_int_eq(ax_cmd_prep(5, argv), 1);
  ax_error_clear();
  snprintf(path, sizeof path, "%s_train.bin", prefix);
  ck_assert_msg(access(path, F_OK) != 0, "%s was left behind", path);
}
END_TEST

/* Mappings (the memory checkpoints' slots): a file mapped for writing over an existing one
 * keeps its inode and is cut or grown to the size asked; what one mapping writes the other
 * reads; a 0-byte file maps to nothing; a missing file or directory is one clear error. */
START_TEST(mappings_keep_the_file_and_round_trip) {
  const char *path = tu_path("mapped.bin");
  char big[100], small[40];
  memset(big, 'a', sizeof big);
  memset(small, 'b', sizeof small);
  write_bytes(path, big, sizeof big);
  struct stat before, after;
  ck_assert_int_eq(stat(path, &before), 0);
  AxFileMap m;
  ck_assert_int_eq(ax_file_map_write(path, sizeof small, &m), AX_OK);
  memcpy(m.data, small, sizeof small);
  ax_file_unmap(&m);
  ck_assert_ptr_null(m.data);
  ck_assert_int_eq(stat(path, &after), 0);
  ck_assert_uint_eq(after.st_ino, before.st_ino);
  ck_assert_int_eq((int)after.st_size, (int)sizeof small);
  ck_assert_int_eq(ax_file_map_read(path, &m), AX_OK);
  ck_assert_uint_eq(m.size, sizeof small);
  ck_assert_int_eq(memcmp(m.data, small, sizeof small), 0);
  ax_file_unmap(&m);
  ck_assert_int_eq(ax_file_map_write(path, 0, &m), AX_OK); /* cut to nothing */
  ck_assert_ptr_null(m.data);
  ck_assert_int_eq(stat(path, &after), 0);
  ck_assert_int_eq((int)after.st_size, 0);
  ck_assert_int_eq(ax_file_map_read(tu_path("missing.bin"), &m), AX_ERR);
  ck_assert_ptr_nonnull(strstr(ax_error_message(), "missing.bin"));
  ax_error_clear();
  ck_assert_int_eq(ax_file_map_write(tu_path("no-dir/new.bin"), 10, &m), AX_ERR);
  ck_assert_ptr_nonnull(strstr(ax_error_message(), "no-dir/new.bin"));
  ck_assert_ptr_null(m.data);
  ax_error_clear();
  ck_assert_int_eq(ax_file_map_write(tu_path(""), 10, &m), AX_ERR); /* the directory */
  ax_error_clear();
}
END_TEST

/* The streaming copy equals memcpy at every alignment and length around its vector width and
 * its short-copy cutoff, and touches nothing outside the destination. */
START_TEST(stream_copy_equals_memcpy) {
  enum { MAX = 300, PAD = 64 };
  unsigned char src[MAX + PAD], dst[MAX + 2 * PAD];
  for (int i = 0; i < MAX + PAD; i++) src[i] = (unsigned char)(i * 37 + 11);
  for (int so = 0; so < 33; so += 7)
    for (int doff = 0; doff < 40; doff++)
      for (int n = 0; n < MAX; n += n < 100 ? 1 : 13) {
        memset(dst, 0xEE, sizeof dst);
        ax_stream_copy(dst + PAD + doff - 32, src + so, (size_t)n);
        unsigned char *d = dst + PAD + doff - 32;
        int outside = 0; /* bytes touched outside the destination (one assertion a case: check's
                            assertions each cost a system call) */
        for (unsigned char *p = dst; p < d; p++) outside += *p != 0xEE;
        for (unsigned char *p = d + n; p < dst + sizeof dst; p++) outside += *p != 0xEE;
        ck_assert_msg(memcmp(d, src + so, (size_t)n) == 0 && outside == 0,
                      "n %d src +%d dst +%d: other bytes, or %d outside", n, so, doff, outside);
      }
}
END_TEST

/* The stage files' configurations: CFG, whose last stages keep their small tied wte copy in
 * their sections, and a larger vocabulary, whose last stages leave it out. */
static const AxGptConfig STAGE_CFGS[2] = {
    {.max_seq = 8, .vocab = 10, .padded_vocab = 16, .layers = 3, .heads = 2, .channels = 4},
    {.max_seq = 8, .vocab = 100, .padded_vocab = 128, .layers = 3, .heads = 2, .channels = 4}};

/* A stage's checkpoint file filled into memory (a memory checkpoint's slot) has the very bytes,
 * size and CRC of the file written to disk; a buffer of another size is refused. */
START_TEST(stage_file_filled_in_memory_equals_the_written_one) {
  const AxGptConfig *C = &STAGE_CFGS[_i];
  for (int P = 1; P <= 3; P++)
    for (int s = 0; s < P; s++) {
      int l0 = C->layers * s / P, l1 = C->layers * (s + 1) / P;
      AxStageLayout lay;
      ax_stage_layout(&lay, C, l0, l1, s == 0, s == P - 1);
      float *w = tu_random(lay.total, 1.0f, 10 + (uint64_t)s), *m = tu_random(lay.total, 1.0f, 20),
            *v = tu_random(lay.total, 1.0f, 30);
      AxCkptFile disk = {{0}, 0, 0}, mem = {{0}, 0, 0};
      ck_assert_int_eq(ax_ckpt_write_stage(tu_path(""), s, C, &lay, P, w, m, v, &disk), AX_OK);
      size_t bytes;
      ck_assert_int_eq(ax_ckpt_stage_bytes(C, &lay, s, P, &bytes), AX_OK);
      unsigned char *buf = tu_alloc(bytes + 1), *file;
      size_t n;
      char path[1100];
      snprintf(path, sizeof path, "%s/%s", tu_path(""), disk.name);
      ck_assert_int_eq(ax_file_read_all(path, &file, &n), AX_OK);
      ck_assert_uint_eq(n, bytes);
      ck_assert_int_eq(ax_ckpt_fill_stage(buf, bytes, s, C, &lay, P, w, m, v, 0, 1, &mem),
                       AX_OK);
      ck_assert_str_eq(mem.name, disk.name);
      ck_assert_uint_eq(mem.bytes, disk.bytes);
      ck_assert_uint_eq(mem.crc, disk.crc);
      ck_assert_int_eq(memcmp(buf, file, bytes), 0);
      /* an array already in place (zero-copy: the optimizer wrote it) is only CRC'd */
      AxCkptSections sec;
      ck_assert_int_eq(ax_ckpt_stage_sections(C, &lay, s, P, &sec), AX_OK);
      ck_assert_uint_eq(sec.bytes, bytes);
      size_t tied = P > 1 && s == P - 1 ? lay.count[AX_P_WTE] : 0; /* left out if large */
      ck_assert_uint_eq(sec.skip, tied * 4 > lay.total ? tied : 0);
      if (tied) ck_assert_int_eq(sec.skip != 0, _i == 1); /* both cases occur */
      ck_assert_uint_eq(sec.data % 64 + sec.stride % 64, 0);
      memset(buf, 0, bytes);
      memcpy(buf + sec.data + sec.stride, m + sec.skip, sec.count * sizeof(float));
      AxCkptFile kept = {{0}, 0, 0};
      ck_assert_int_eq(ax_ckpt_fill_stage(buf, bytes, s, C, &lay, P, w, NULL, v, 0, 1, &kept),
                       AX_OK);
      ck_assert_uint_eq(kept.crc, disk.crc);
      ck_assert_int_eq(memcmp(buf, file, bytes), 0);
      /* the CRC in parts (as nodes holding identical copies make it): the same bytes but the
       * trailer, and the parts' CRCs put together are the file's */
      for (int parts = 2; parts <= 3; parts++) {
        uint32_t crcs[3];
        for (int k = 0; k < parts; k++) {
          memset(buf, 0, bytes);
          ck_assert_int_eq(ax_ckpt_fill_stage(buf, bytes, s, C, &lay, P, w, m, v, k, parts,
                                              &mem), AX_OK);
          ck_assert_int_eq(memcmp(buf, file, bytes - 4), 0);
          crcs[k] = mem.crc;
        }
        ck_assert_uint_ne(crcs[0], disk.crc);
        ck_assert_uint_eq(ax_ckpt_crc_of_parts(crcs, parts, bytes - 4), disk.crc);
      }
      free(file);
      ck_assert_int_eq(ax_ckpt_fill_stage(buf, bytes + 1, s, C, &lay, P, w, m, v, 0, 1, &mem),
                       AX_ERR);
      ax_error_clear();
      ck_assert_int_eq(ax_ckpt_fill_stage(buf, bytes, s, C, &lay, P, w, m, v, 2, 2, &mem),
                       AX_ERR);
      ax_error_clear();
    }
}
END_TEST

/* Position-coded state: element j of tensor id of a stage is the whole model's element
 * file_offset + j, array a (master, m, v) offset by a * 1e4, so every split agrees. */
static void coded_state(const AxStageLayout *lay, float *arrays[3]) {
  for (int a = 0; a < 3; a++) {
    arrays[a] = tu_alloc(lay->total * sizeof(float));
    for (int id = 0; id < AX_N_PARAMS; id++)
      for (size_t j = 0; lay->has[id] && j < lay->count[id]; j++)
        arrays[a][lay->offset[id] + j] = (float)(lay->file_offset[id] + j) + 1e4f * (float)a;
  }
}

/* Reads dir's checkpoint into every stage of a P-way split and checks each element. */
static void expect_read_back(const AxGptConfig *C, const char *dir, int P) {
  AxCkptManifest man;
  int rc = ax_ckpt_load_manifest(dir, 1, &man);
  ck_assert_msg(rc == AX_OK, "%s", ax_error_text());
  for (int s = 0; s < P; s++) {
    AxStageLayout lay;
    ax_stage_layout(&lay, C, C->layers * s / P, C->layers * (s + 1) / P, s == 0, s == P - 1);
    float *want[3], *got[3];
    coded_state(&lay, want);
    coded_state(&lay, got);
    for (int a = 0; a < 3; a++) memset(got[a], 0, lay.total * sizeof(float));
    ck_assert_int_eq(ax_ckpt_read_stage(dir, &man, &lay, got[0], got[1], got[2]), AX_OK);
    for (int a = 0; a < 3; a++)
      ck_assert_int_eq(memcmp(got[a], want[a], lay.total * sizeof(float)), 0);
  }
  ax_ckpt_manifest_free(&man);
}

/* A checkpoint written on 3 stages reads back on 1, 2 and 3; so does one in the format before
 * sections (each record's master, m and v in turn; manifests with six numbers a record). */
START_TEST(stage_files_read_back_on_any_split_and_the_old_layout) {
  const AxGptConfig *C = &STAGE_CFGS[_i];
  int P = 3;
  AxCkptManifest man = {.model = *C, .batch = 1, .seq = 4, .stages = P, .n_files = P,
                        .loss_scale = 1};
  man.files = tu_alloc((size_t)P * sizeof *man.files);
  man.records = tu_alloc(AX_N_PARAMS * (size_t)P * sizeof *man.records);
  for (int s = 0; s < P; s++) {
    int l0 = C->layers * s / P, l1 = C->layers * (s + 1) / P, n;
    AxStageLayout lay;
    ax_stage_layout(&lay, C, l0, l1, s == 0, s == P - 1);
    float *st[3];
    coded_state(&lay, st);
    ck_assert_int_eq(ax_ckpt_write_stage(tu_path(""), s, C, &lay, P, st[0], st[1], st[2],
                                         &man.files[s]), AX_OK);
    AxCkptRecord *r;
    ck_assert_int_eq(ax_ckpt_stage_records(C, l0, l1, s, P, &r, &n), AX_OK);
    memcpy(man.records + man.n_records, r, (size_t)n * sizeof *r);
    man.n_records += n;
    free(r);
  }
  ck_assert_int_eq(ax_ckpt_write_manifest(tu_path(""), &man), AX_OK);
  for (int q = 1; q <= 3; q++) expect_read_back(C, tu_path(""), q);
  /* a record whose stride puts m and v past the file's end, or over its master weights, is
   * refused when the manifest is read */
  unsigned long long strides[2] = {man.files[0].bytes, man.records[0].count * 4 - 4};
  for (int k = 0; k < 2; k++) {
    AxCkptRecord keep_rec = man.records[0];
    man.records[0].stride = strides[k];
    ck_assert_int_eq(ax_ckpt_write_manifest(tu_path(""), &man), AX_OK);
    AxCkptManifest bad;
    expect_error(ax_ckpt_load_manifest(tu_path(""), 0, &bad), "lies outside");
    man.records[0] = keep_rec;
  }

  /* the old layout, one stage: records of 32 bytes, then per record master, m, v */
  char dir[1024], path[1100];
  snprintf(dir, sizeof dir, "%s", tu_path(_i ? "old1" : "old0"));
  ck_assert_int_eq(mkdir(dir, 0777), 0);
  AxStageLayout lay;
  ax_stage_layout(&lay, C, 0, C->layers, 1, 1);
  float *st[3];
  coded_state(&lay, st);
  int n;
  AxCkptRecord *r;
  ck_assert_int_eq(ax_ckpt_stage_records(C, 0, C->layers, 0, 1, &r, &n), AX_OK);
  size_t head = 16 + 32 * (size_t)n, bytes = head + 3 * lay.total * sizeof(float);
  unsigned char *file = tu_alloc(bytes + 4);
  memcpy(file, "AXCKPT01", 8);
  int32_t sn[2] = {0, n};
  memcpy(file + 8, sn, sizeof sn);
  FILE *mf = fopen((snprintf(path, sizeof path, "%s/manifest", dir), path), "w");
  ck_assert_ptr_nonnull(mf);
  char text[8192];
  size_t len = (size_t)snprintf(text, sizeof text,
                                "axonn-checkpoint 1\nstep 1\nadam_steps 1\ndata_position 0\n"
                                "loss_scale 1 0 0\nmodel %d %d %d %d %d %d\nbatch 1 4\nstages 1\n",
                                C->layers, C->channels, C->heads, C->vocab, C->padded_vocab,
                                C->max_seq);
  size_t off = head;
  for (int i = 0; i < n; i++) {
    int32_t ids[4] = {r[i].id, r[i].l0, r[i].l1, 0};
    uint64_t sizes[2] = {r[i].count, off};
    memcpy(file + 16 + 32 * (size_t)i, ids, sizeof ids);
    memcpy(file + 16 + 32 * (size_t)i + 16, sizes, sizeof sizes);
    len += (size_t)snprintf(text + len, sizeof text - len, "record 0 %d %d %d %llu %zu\n",
                            r[i].id, r[i].l0, r[i].l1, r[i].count, off);
    for (int a = 0; a < 3; a++, off += r[i].count * sizeof(float))
      memcpy(file + off, st[a] + lay.offset[r[i].id], r[i].count * sizeof(float));
  }
  uint32_t crc = ax_crc32(0, file, bytes);
  memcpy(file + bytes, &crc, 4);
  write_bytes((snprintf(path, sizeof path, "%s/stage-0.bin", dir), path), file, bytes + 4);
  len += (size_t)snprintf(text + len, sizeof text - len, "file stage-0.bin %zu %08x\n", bytes,
                          crc);
  fprintf(mf, "%scrc %08x\n", text, ax_crc32(0, text, len));
  fclose(mf);
  free(r);
  for (int q = 1; q <= 3; q++) expect_read_back(C, dir, q);
  AxCkptManifest old; /* no "state" lines: none listed, and none needed */
  ck_assert_int_eq(ax_ckpt_load_manifest(dir, 1, &old), AX_OK);
  ck_assert_int_eq(old.n_states, 0);
  ax_ckpt_manifest_free(&old);
}
END_TEST

/* A one-stage checkpoint of STAGE_CFGS[0] at dir/step-N with two per-rank state files
 * (codec-0.bin, codec-1.bin), all listed in its manifest. */
static void write_checkpoint_with_states(const char *dir, int step) {
  const AxGptConfig *C = &STAGE_CFGS[0];
  char step_dir[1024], name[32];
  ck_assert_int_eq(ax_ckpt_make_dirs(dir, step), AX_OK);
  ax_ckpt_step_dir(dir, step, step_dir);
  AxCkptFile stage, states[2];
  AxCkptManifest man = {.step = step, .model = *C, .batch = 1, .seq = 4, .stages = 1,
                        .files = &stage, .n_files = 1, .states = states, .n_states = 2,
                        .loss_scale = 1};
  AxStageLayout lay;
  ax_stage_layout(&lay, C, 0, C->layers, 1, 1);
  float *st[3];
  coded_state(&lay, st);
  ck_assert_int_eq(ax_ckpt_write_stage(step_dir, 0, C, &lay, 1, st[0], st[1], st[2], &stage),
                   AX_OK);
  ck_assert_int_eq(ax_ckpt_stage_records(C, 0, C->layers, 0, 1, &man.records, &man.n_records),
                   AX_OK);
  for (int r = 0; r < 2; r++) {
    snprintf(name, sizeof name, "codec-%d.bin", r);
    ck_assert_int_eq(ax_ckpt_blob_write(step_dir, name, "codec onebit", st[1], 4000, &states[r]),
                     AX_OK);
  }
  ck_assert_int_eq(ax_ckpt_write_manifest(step_dir, &man), AX_OK);
  free(man.records);
}

/* The manifest lists the per-rank state files ("state NAME BYTES CRC") as it lists the stage
 * files: a checkpoint missing one, or holding a damaged one, is incomplete, and the newest
 * complete one before it is found instead. */
START_TEST(manifest_lists_state_files_and_a_checkpoint_needs_them) {
  char dir[1024], step_dir[1024], path[1100];
  snprintf(dir, sizeof dir, "%s", tu_path("ckstates"));
  for (int step = 1; step <= 3; step++) write_checkpoint_with_states(dir, step);
  AxCkptManifest man;
  ck_assert_int_eq(ax_ckpt_load_manifest(ax_ckpt_step_dir(dir, 3, step_dir), 1, &man), AX_OK);
  ck_assert_int_eq(man.n_states, 2);
  ck_assert_str_eq(man.states[1].name, "codec-1.bin");
  ck_assert_int_eq(ax_ckpt_check_file(step_dir, &man.states[1]), AX_OK);
  ax_ckpt_manifest_free(&man);
  size_t n;
  char *text = read_bytes((snprintf(path, sizeof path, "%s/manifest", step_dir), path), &n);
  ck_assert_ptr_nonnull(memmem(text, n, "\nstate codec-0.bin ", 19));
  /* step 3 loses codec-1.bin, step 2's is damaged: both passed over for step 1 */
  ck_assert_int_eq(unlink((snprintf(path, sizeof path, "%s/codec-1.bin", step_dir), path)), 0);
  expect_error(ax_ckpt_load_manifest(step_dir, 1, &man), "codec-1.bin");
  ck_assert_int_eq(ax_ckpt_load_manifest(step_dir, 0, &man), AX_OK); /* files unchecked */
  ax_ckpt_manifest_free(&man);
  snprintf(path, sizeof path, "%s/codec-1.bin", ax_ckpt_step_dir(dir, 2, step_dir));
  FILE *f = fopen(path, "r+b");
  ck_assert_ptr_nonnull(f);
  fseek(f, 100, SEEK_SET);
  fputc('Z', f);
  fclose(f);
  expect_error(ax_ckpt_load_manifest(step_dir, 1, &man), "CRC mismatch");
  int found;
  ck_assert_int_eq(ax_ckpt_find_latest(dir, &found, step_dir, &man), AX_OK);
  ck_assert(found && man.step == 1 && man.n_states == 2);
  ax_ckpt_manifest_free(&man);
}
END_TEST

/* The checkpoints' CRC-32 (carry-less folding where the CPU has it, slicing-by-8 otherwise):
 * the standard check value, and random buffers at
 * every alignment and length, fed whole or in two parts, against the bit-at-a-time
 * definition. */
static uint32_t crc_by_bits(const unsigned char *p, size_t n) {
  uint32_t c = ~0u;
  for (size_t i = 0; i < n; i++) {
    c ^= p[i];
    for (int k = 0; k < 8; k++) c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
  }
  return ~c;
}

/* CRC-32C (TensorBoard's records): the check value of its definition, and in two pieces. */
START_TEST(crc32c_check_value) {
  ck_assert_uint_eq(ax_crc32c(0, "123456789", 9), 0xE3069283u);
  ck_assert_uint_eq(ax_crc32c(0, "", 0), 0);
  ck_assert_uint_eq(ax_crc32c(ax_crc32c(0, "1234", 4), "56789", 5), 0xE3069283u);
}
END_TEST

static const char *const crc_path_names[] = {"the tables", "PCLMULQDQ folding",
                                              "AVX-512 VPCLMULQDQ folding"};

/* Every path this CPU has, against the bitwise definition and in two pieces. */
START_TEST(crc32_matches_its_definition) {
  ck_assert_uint_eq(ax_crc32(0, "123456789", 9), 0xCBF43926u);
  ck_assert_uint_eq(ax_crc32(0, "", 0), 0);
  unsigned char *buf = tu_alloc(4096);
  srand(11);
  for (int i = 0; i < 4096; i++) buf[i] = (unsigned char)rand();
  AxCrc32Path best = ax_crc32_best_path();
  /* lengths below, at and above the 64 and 256 bytes the folding paths start at, odd offsets */
  for (int t = 0; t < 400; t++) {
    size_t off = (size_t)(rand() % 16), n = (size_t)(rand() % (t < 200 ? 600 : 4000)),
           cut = n ? (size_t)rand() % n : 0;
    uint32_t whole = crc_by_bits(buf + off, n);
    for (AxCrc32Path path = AX_CRC32_TABLES; path <= best; path++) {
      ck_assert_uint_eq(ax_crc32_by(path, 0, buf + off, n), whole);
      ck_assert_uint_eq(ax_crc32_by(path, ax_crc32_by(path, 0, buf + off, cut), buf + off + cut,
                                    n - cut),
                        whole);
    }
    ck_assert_uint_eq(ax_crc32(0, buf + off, n), whole);
  }
  printf("crc32: ax_crc32 uses %s; every path up to it checked%s\n", crc_path_names[best],
         best < AX_CRC32_VCLMUL ? " (the faster ones are not on this CPU: not tested here)" : "");
}
END_TEST

/* Many folding rounds: a large buffer by every path and in pieces. */
START_TEST(crc32_large_buffers_agree) {
  size_t n = (size_t)3 << 20;
  unsigned char *buf = tu_alloc(n);
  for (size_t i = 0; i < n; i++) buf[i] = (unsigned char)(i * 2654435761u >> 13);
  uint32_t whole = ax_crc32_by(AX_CRC32_TABLES, 0, buf, n);
  for (AxCrc32Path path = AX_CRC32_CLMUL; path <= ax_crc32_best_path(); path++)
    ck_assert_uint_eq(ax_crc32_by(path, 0, buf, n), whole);
  uint32_t pieces = 0;
  for (size_t at = 0, step = 1000003; at < n; at += step)
    pieces = ax_crc32(pieces, buf + at, at + step < n ? step : n - at);
  ck_assert_uint_eq(pieces, whole);
}
END_TEST

/* Parts CRC'd apart and combined give the CRC of the whole: any cut, empty parts, and a
 * length with many bits (the 3 MB buffer in 1 to 5 parts). */
START_TEST(crc32_parts_combine_into_the_whole) {
  size_t n = (size_t)3 << 20;
  unsigned char *buf = tu_alloc(n);
  for (size_t i = 0; i < n; i++) buf[i] = (unsigned char)(i * 2654435761u >> 11);
  ck_assert_uint_eq(ax_crc32_combine(ax_crc32(0, "1234", 4), ax_crc32(0, "56789", 5), 5),
                    0xCBF43926u);
  ck_assert_uint_eq(ax_crc32_combine(0x12345678u, 0, 0), 0x12345678u);
  uint32_t whole = ax_crc32(0, buf, n);
  srand(5);
  for (int parts = 1; parts <= 5; parts++)
    for (int t = 0; t < 4; t++) {
      size_t at = 0;
      uint32_t crc = 0;
      for (int k = 0; k < parts; k++) {
        size_t len = k == parts - 1 ? n - at : (size_t)rand() % (n - at + 1);
        crc = ax_crc32_combine(crc, ax_crc32(0, buf + at, len), len);
        at += len;
      }
      ck_assert_uint_eq(crc, whole);
    }
}
END_TEST

/* The built-in corpus: every token the chain draws is, for its seed, the one a plain scan of
 * the context's probabilities picks (the first whose running sum exceeds the uniform draw; the
 * last when none does), and every triple is one the chain can emit. */
static int scan_successor(const AxMarkov *m, int ctx, double u) {
  double acc = 0;
  for (int i = 0; i < m->n_next[ctx]; i++) {
    acc += m->prob[ctx][i];
    if (u < acc) return m->next[ctx][i];
  }
  return m->next[ctx][m->n_next[ctx] - 1];
}

START_TEST(markov_corpus_is_the_chains_scan) {
  enum { N = 200000 };
  AxMarkov m;
  uint16_t *out = malloc(N * sizeof *out);
  uint8_t *text = malloc(N);
  ck_assert(out && text);
  for (uint64_t seed = 1; seed <= 1337; seed += 668) {
    ax_markov_build(&m, seed);
    ax_markov_generate(&m, seed + 1, out, N);
    AxRng r;
    ax_rng_seed(&r, seed + 1);
    int a = 0, b = 0;
    for (size_t i = 0; i < N; i++) {
      int c = scan_successor(&m, a * AX_MARKOV_SYMBOLS + b, ax_rng_double(&r));
      ck_assert_uint_eq(out[i], m.symbol[c]);
      text[i] = (uint8_t)out[i];
      a = b, b = c;
    }
    ck_assert_double_eq(ax_markov_valid_fraction(&m, text, N), 1.0);
  }
  free(out);
  free(text);
}
END_TEST

int main(void) {
  Suite *s = suite_create("formats");
  TCase *tc = tu_tcase(s, "formats", 30);
  tcase_add_test(tc, crc32_matches_its_definition);
  tcase_add_test(tc, crc32c_check_value);
  tcase_add_test(tc, crc32_large_buffers_agree);
  tcase_add_test(tc, crc32_parts_combine_into_the_whole);
  tcase_add_test(tc, markov_corpus_is_the_chains_scan);
  tcase_add_test(tc, mappings_keep_the_file_and_round_trip);
  tcase_add_test(tc, stream_copy_equals_memcpy);
  tcase_add_loop_test(tc, stage_file_filled_in_memory_equals_the_written_one, 0, 2);
  tcase_add_test(tc, model_file_layout_follows_spec);
  tcase_add_test(tc, model_file_stage_slices_round_trip);
  tcase_add_test(tc, model_file_damage_is_reported);
  tcase_add_test(tc, shard_round_trip_and_damage);
  tcase_add_test(tc, loader_sequential_windows_wrap);
  tcase_add_test(tc, loader_shuffle_visits_each_window_once);
  tcase_add_test(tc, loader_errors);
  tcase_add_loop_test(tc, stage_files_read_back_on_any_split_and_the_old_layout, 0, 2);
  tcase_add_test(tc, manifest_lists_state_files_and_a_checkpoint_needs_them);
  tcase_add_test(tc, prep_splits_bytes);
  tcase_add_test(tc, prep_leaves_nothing_when_a_shard_fails);
  return tu_run(s);
}
