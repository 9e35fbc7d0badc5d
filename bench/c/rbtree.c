/*
 * rbtree.c -- a red-black tree (the textbook algorithm: insertion and deletion
 * with recolouring and rotations, NULL leaves, the parent of a removed position
 * tracked explicitly so that no shared sentinel is ever written), every field
 * access transactional. Deleting a node with two children moves its successor's
 * key and value into it and removes the successor.
 *
 * Invariants (checked by rb_check): keys in search order; a red node has black
 * children; every path from a node to a leaf has as many black nodes; the root
 * is black; parent pointers match.
 */
#include <stdio.h>
#include <stdlib.h>

#include "rbtree.h"

#define RED 1
#define BLACK 0

struct rbnode {
  intptr_t key;
  intptr_t value;
  intptr_t color;
  struct rbnode *left;
  struct rbnode *right;
  struct rbnode *parent;
};

struct rbtree {
  struct rbnode *root;
};

#define RD(field) TM_READ(field)
#define WR(field, v) TM_WRITE(field, v)

struct rbtree *rb_create(void) {
  struct rbtree *t = malloc(sizeof *t);
  t->root = NULL;
  return t;
}

/* Never inlined: GCC 12's -fgnu-tm fails (internal compiler error in
 * expand_call_tm) when it is inlined into delete_fixup; the same in every build. */
TM_SAFE __attribute__((noinline)) static intptr_t color_of(struct rbnode *n) {
  return n == NULL ? BLACK : RD(n->color);
}

TM_SAFE static void set_color(struct rbnode *n, intptr_t color) {
  if (RD(n->color) != color)
    WR(n->color, color);
}

/* Replaces child `old` of `parent` (the root if parent is NULL) by `new`. */
TM_SAFE static void replace_child(struct rbtree *t, struct rbnode *parent,
                                  struct rbnode *old, struct rbnode *new) {
  if (parent == NULL)
    WR(t->root, new);
  else if (RD(parent->left) == old)
    WR(parent->left, new);
  else
    WR(parent->right, new);
}

TM_SAFE static void rotate_left(struct rbtree *t, struct rbnode *x) {
  struct rbnode *y = RD(x->right);
  struct rbnode *middle = RD(y->left);
  WR(x->right, middle);
  if (middle != NULL)
    WR(middle->parent, x);
  struct rbnode *parent = RD(x->parent);
  WR(y->parent, parent);
  replace_child(t, parent, x, y);
  WR(y->left, x);
  WR(x->parent, y);
}

TM_SAFE static void rotate_right(struct rbtree *t, struct rbnode *x) {
  struct rbnode *y = RD(x->left);
  struct rbnode *middle = RD(y->right);
  WR(x->left, middle);
  if (middle != NULL)
    WR(middle->parent, x);
  struct rbnode *parent = RD(x->parent);
  WR(y->parent, parent);
  replace_child(t, parent, x, y);
  WR(y->right, x);
  WR(x->parent, y);
}

TM_SAFE static struct rbnode *find(struct rbtree *t, intptr_t key) {
  struct rbnode *n = RD(t->root);
  while (n != NULL) {
    intptr_t k = RD(n->key);
    if (key == k)
      return n;
    n = key < k ? RD(n->left) : RD(n->right);
  }
  return NULL;
}

TM_SAFE intptr_t rb_get(struct rbtree *t, intptr_t key) {
  struct rbnode *n = find(t, key);
  return n == NULL ? 0 : RD(n->value);
}

TM_SAFE static void insert_fixup(struct rbtree *t, struct rbnode *z) {
  struct rbnode *p;
  while ((p = RD(z->parent)) != NULL && RD(p->color) == RED) {
    struct rbnode *g = RD(p->parent); /* exists: a red node is not the root */
    if (p == RD(g->left)) {
      struct rbnode *u = RD(g->right);
      if (color_of(u) == RED) {
        WR(p->color, BLACK);
        WR(u->color, BLACK);
        WR(g->color, RED);
        z = g;
        continue;
      }
      if (z == RD(p->right)) {
        z = p;
        rotate_left(t, z);
        p = RD(z->parent);
      }
      WR(p->color, BLACK);
      WR(g->color, RED);
      rotate_right(t, g);
    } else {
      struct rbnode *u = RD(g->left);
      if (color_of(u) == RED) {
        WR(p->color, BLACK);
        WR(u->color, BLACK);
        WR(g->color, RED);
        z = g;
        continue;
      }
      if (z == RD(p->left)) {
        z = p;
        rotate_right(t, z);
        p = RD(z->parent);
      }
      WR(p->color, BLACK);
      WR(g->color, RED);
      rotate_left(t, g);
    }
  }
  set_color(RD(t->root), BLACK);
}

TM_SAFE int rb_insert(struct rbtree *t, intptr_t key, intptr_t value) {
  struct rbnode *parent = NULL;
  struct rbnode *n = RD(t->root);
  while (n != NULL) {
    intptr_t k = RD(n->key);
    if (key == k)
      return 0;
    parent = n;
    n = key < k ? RD(n->left) : RD(n->right);
  }
  struct rbnode *z = TM_MALLOC(sizeof *z);
  WR(z->key, key);
  WR(z->value, value);
  WR(z->color, RED);
  WR(z->left, (struct rbnode *)NULL);
  WR(z->right, (struct rbnode *)NULL);
  WR(z->parent, parent);
  if (parent == NULL)
    WR(t->root, z);
  else if (key < RD(parent->key))
    WR(parent->left, z);
  else
    WR(parent->right, z);
  insert_fixup(t, z);
  return 1;
}

/* Restores the colours after a black node was removed above x (NULL or a node)
 * whose parent is xp. */
TM_SAFE static void delete_fixup(struct rbtree *t, struct rbnode *x, struct rbnode *xp) {
  while (x != RD(t->root) && color_of(x) == BLACK) {
    if (x == RD(xp->left)) {
      struct rbnode *w = RD(xp->right);
      if (color_of(w) == RED) {
        WR(w->color, BLACK);
        WR(xp->color, RED);
        rotate_left(t, xp);
        w = RD(xp->right);
      }
      if (color_of(RD(w->left)) == BLACK && color_of(RD(w->right)) == BLACK) {
        WR(w->color, RED);
        x = xp;
        xp = RD(x->parent);
        continue;
      }
      if (color_of(RD(w->right)) == BLACK) {
        set_color(RD(w->left), BLACK);
        WR(w->color, RED);
        rotate_right(t, w);
        w = RD(xp->right);
      }
      WR(w->color, RD(xp->color));
      WR(xp->color, BLACK);
      set_color(RD(w->right), BLACK);
      rotate_left(t, xp);
    } else {
      struct rbnode *w = RD(xp->left);
      if (color_of(w) == RED) {
        WR(w->color, BLACK);
        WR(xp->color, RED);
        rotate_right(t, xp);
        w = RD(xp->left);
      }
      if (color_of(RD(w->left)) == BLACK && color_of(RD(w->right)) == BLACK) {
        WR(w->color, RED);
        x = xp;
        xp = RD(x->parent);
        continue;
      }
      if (color_of(RD(w->left)) == BLACK) {
        set_color(RD(w->right), BLACK);
        WR(w->color, RED);
        rotate_left(t, w);
        w = RD(xp->left);
      }
      WR(w->color, RD(xp->color));
      WR(xp->color, BLACK);
      set_color(RD(w->left), BLACK);
      rotate_right(t, xp);
    }
    x = RD(t->root);
    xp = NULL;
  }
  if (x != NULL)
    set_color(x, BLACK);
}

TM_SAFE int rb_delete(struct rbtree *t, intptr_t key) {
  struct rbnode *z = find(t, key);
  if (z == NULL)
    return 0;
  /* y: the node that leaves the tree (z, or z's successor). */
  struct rbnode *y = z;
  if (RD(z->left) != NULL && RD(z->right) != NULL) {
    y = RD(z->right);
    struct rbnode *l;
    while ((l = RD(y->left)) != NULL)
      y = l;
  }
  struct rbnode *x = RD(y->left) != NULL ? RD(y->left) : RD(y->right);
  struct rbnode *xp = RD(y->parent);
  if (x != NULL)
    WR(x->parent, xp);
  replace_child(t, xp, y, x);
  if (y != z) {
    WR(z->key, RD(y->key));
    WR(z->value, RD(y->value));
  }
  if (RD(y->color) == BLACK)
    delete_fixup(t, x, xp);
  TM_FREE(y, sizeof *y);
  return 1;
}

static intptr_t plain_color(struct rbnode *n) { return n == NULL ? BLACK : n->color; }

/* The black height of n's subtree, whose keys must lie in (low, high), or -1 if
 * broken; counts nodes in *count. */
static long check_node(struct rbnode *n, struct rbnode *parent, intptr_t low,
                       intptr_t high, long *count) {
  if (n == NULL)
    return 1;
  (*count)++;
  if (n->parent != parent || n->key <= low || n->key >= high)
    return -1;
  if (n->color == RED && (plain_color(n->left) == RED || plain_color(n->right) == RED))
    return -1;
  long l = check_node(n->left, n, low, n->key, count);
  long r = check_node(n->right, n, n->key, high, count);
  if (l < 0 || r < 0 || l != r)
    return -1;
  return l + (n->color == BLACK);
}

long rb_check(struct rbtree *t) {
  long count = 0;
  if (plain_color(t->root) != BLACK ||
      check_node(t->root, NULL, INTPTR_MIN, INTPTR_MAX, &count) < 0) {
    fprintf(stderr, "rbtree: not a red-black search tree\n");
    return -1;
  }
  return count;
}

static void walk(struct rbnode *n, void (*visit)(intptr_t, intptr_t, void *), void *arg) {
  if (n == NULL)
    return;
  walk(n->left, visit, arg);
  visit(n->key, n->value, arg);
  walk(n->right, visit, arg);
}

void rb_walk(struct rbtree *t, void (*visit)(intptr_t, intptr_t, void *), void *arg) {
  walk(t->root, visit, arg);
}
