/* test_spare_buffers.c — the keep of large scratch buffers (src/core/spare_buffers.h): a buffer
 * given back is handed out again to a request it covers (the smallest that does), not to one it
 * is too small for; a full keep drops its smallest buffer for a larger one and frees a given
 * buffer smaller than all it holds; release frees every kept buffer. (Check forks each test,
 * so each starts with an empty keep.) */
#include <stdlib.h>
#include <string.h>

#include "src/core/spare_buffers.h"
#include "testutil.h"

enum { KEEP = 16 }; /* spare_buffers.c's keep */

START_TEST(a_given_buffer_is_taken_again) {
  size_t cap;
  char *a = ax_spare_take(1 << 20, &cap);
  ck_assert_ptr_nonnull(a);
  ck_assert_uint_eq(cap, 1 << 20);
  memset(a, 1, cap); /* all of it is usable */
  ax_spare_give(a, cap);
  size_t cap2;
  char *b = ax_spare_take(1000, &cap2); /* smaller: the kept buffer, whole */
  ck_assert_ptr_eq(b, a);
  ck_assert_uint_eq(cap2, 1 << 20);
  size_t cap3;
  char *c = ax_spare_take(2 << 20, &cap3); /* larger than anything kept: a new one */
  ck_assert_ptr_nonnull(c);
  ck_assert_ptr_ne(c, a);
  ck_assert_uint_eq(cap3, 2 << 20);
  ax_spare_give(b, cap2);
  ax_spare_give(c, cap3);
  ck_assert_int_eq(ax_spare_release_all(), 2);
  ck_assert_int_eq(ax_spare_release_all(), 0);
}
END_TEST

START_TEST(the_smallest_buffer_that_covers_is_taken) {
  size_t caps[3] = {4096, 1024, 2048}, cap;
  void *bufs[3];
  for (int i = 0; i < 3; i++) bufs[i] = ax_spare_take(caps[i], &cap);
  for (int i = 0; i < 3; i++) ax_spare_give(bufs[i], caps[i]);
  ck_assert_ptr_eq(ax_spare_take(1500, &cap), bufs[2]); /* 2048, not 4096 */
  ck_assert_uint_eq(cap, 2048);
  ck_assert_ptr_eq(ax_spare_take(1, &cap), bufs[1]);
  ck_assert_ptr_eq(ax_spare_take(1, &cap), bufs[0]);
  free(bufs[0]), free(bufs[1]), free(bufs[2]);
  ck_assert_int_eq(ax_spare_release_all(), 0);
}
END_TEST

START_TEST(a_full_keep_holds_the_largest) {
  void *bufs[KEEP];
  size_t cap;
  for (int i = 0; i < KEEP; i++) bufs[i] = ax_spare_take(1000 * (size_t)(i + 1), &cap);
  for (int i = 0; i < KEEP; i++) ax_spare_give(bufs[i], 1000 * (size_t)(i + 1));
  ax_spare_give(ax_spare_take(500, &cap), 500); /* smaller than all 16 kept: freed */
  ck_assert_ptr_eq(ax_spare_take(400, &cap), bufs[0]); /* so 1000 B is the least that covers */
  ax_spare_give(bufs[0], 1000);                      /* the keep full again */
  void *big = ax_spare_take(100000, &cap);
  ck_assert_ptr_nonnull(big);
  ax_spare_give(big, 100000); /* replaces the smallest, 1000 B (freed) */
  ck_assert_ptr_eq(ax_spare_take(90000, &cap), big);
  ck_assert_ptr_eq(ax_spare_take(1, &cap), bufs[1]); /* 2000 B: the 1000 B one is gone */
  ck_assert_int_eq(ax_spare_release_all(), KEEP - 2);
  free(big);
  free(bufs[1]);
}
END_TEST

int main(void) {
  Suite *s = suite_create("spare_buffers");
  TCase *tc = tu_tcase(s, "spare_buffers", 60);
  tcase_add_test(tc, a_given_buffer_is_taken_again);
  tcase_add_test(tc, the_smallest_buffer_that_covers_is_taken);
  tcase_add_test(tc, a_full_keep_holds_the_largest);
  return tu_run(s);
}
