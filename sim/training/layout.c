/* layout: ranks and coordinates (see layout.h for the order and its source). Every function is
 * O(1) but the member lists, O(group size). */
#include "layout.h"

struct Layout {
    LayoutShape sh;
    int ranks;
    int stride[DIM_COUNT]; /* rank distance between neighbours along each dimension */
    int size[DIM_COUNT];   /* group size along each dimension */
};

static const char *const dim_names[DIM_COUNT] = {"dp",  "tp", "pp",       "ep",
                                                 "edp", "cp", "dp_intra", "dp_inter"};

const char *layout_dim_name(Dim d) {
    return dim_names[d];
}

Dim layout_dim_class(Dim d) {
    return d == DIM_DP_INTRA || d == DIM_DP_INTER ? DIM_DP : d;
}

void layout_shape_set(LayoutShape *sh, Dim d, int size) {
    switch (d) {
    case DIM_TP:
        sh->tp = size;
        break;
    case DIM_CP:
        sh->cp = size;
        break;
    case DIM_DP:
        sh->dp = size;
        break;
    case DIM_EP:
        sh->ep = size;
        break;
    case DIM_PP:
        sh->pp = size;
        break;
    default: /* the other dimensions are carved from these */
        g_assert_not_reached();
    }
}

Layout *layout_new(LayoutShape sh) {
    g_assert(sh.tp >= 1 && sh.cp >= 1 && sh.dp >= 1 && sh.pp >= 1 && sh.ep >= 1 && sh.vpp >= 1);
    g_assert(sh.dp % sh.ep == 0);
    int q = sh.dp_local > 1 ? sh.dp_local : 1; /* ZeRO++'s blocks of DP replicas */
    g_assert(sh.dp % q == 0);
    Layout *l = g_new0(Layout, 1);
    l->sh = sh;
    l->ranks = sh.tp * sh.cp * sh.dp * sh.pp;
    l->stride[DIM_TP] = 1;
    l->stride[DIM_DP] = sh.tp; /* with context parallelism (layout.h) */
    l->stride[DIM_CP] = sh.tp;
    l->stride[DIM_EP] = sh.tp * sh.cp;          /* the fastest part of dp_idx */
    l->stride[DIM_EDP] = sh.tp * sh.cp * sh.ep; /* the slower part of dp_idx */
    l->stride[DIM_PP] = sh.tp * sh.cp * sh.dp;
    l->stride[DIM_DP_INTRA] = sh.tp * sh.cp;     /* q consecutive DP replicas */
    l->stride[DIM_DP_INTER] = sh.tp * sh.cp * q; /* one per block */
    l->size[DIM_TP] = sh.tp;
    l->size[DIM_DP] = sh.cp * sh.dp;
    l->size[DIM_CP] = sh.cp;
    l->size[DIM_EP] = sh.ep;
    l->size[DIM_EDP] = sh.dp / sh.ep;
    l->size[DIM_PP] = sh.pp;
    l->size[DIM_DP_INTRA] = q;
    l->size[DIM_DP_INTER] = sh.dp / q;
    return l;
}

void layout_free(Layout *l) {
    g_free(l);
}

int layout_ranks(const Layout *l) {
    return l->ranks;
}

int layout_index(const Layout *l, Dim dim, int rank) {
    return rank / l->stride[dim] % l->size[dim];
}

LayoutCoord layout_coord(const Layout *l, int rank) {
    const LayoutShape *s = &l->sh;
    return (LayoutCoord){.tp = rank % s->tp,
                         .cp = rank / s->tp % s->cp,
                         .dp = rank / (s->tp * s->cp) % s->dp,
                         .ep = layout_index(l, DIM_EP, rank),
                         .pp = layout_index(l, DIM_PP, rank)};
}

int layout_rank(const Layout *l, LayoutCoord c) {
    const LayoutShape *s = &l->sh;
    return ((c.pp * s->dp + c.dp) * s->cp + c.cp) * s->tp + c.tp;
}

int layout_stage(const Layout *l, int rank) {
    return layout_index(l, DIM_PP, rank);
}

int layout_stride(const Layout *l, Dim dim) {
    return l->stride[dim];
}

int layout_group_size(const Layout *l, Dim dim) {
    return l->size[dim];
}

int layout_group_count(const Layout *l, Dim dim) {
    return l->ranks / l->size[dim];
}

int layout_max_group_size(const Layout *l) {
    int m = 1;
    for (int d = 0; d < DIM_COUNT; d++)
        m = MAX(m, l->size[d]);
    return m;
}

/* A group of dim is a run of size ranks stride apart; dropping that coordinate from the rank
 * (the part below the stride, and the part above stride * size) numbers the groups densely. */
int layout_group_of(const Layout *l, Dim dim, int rank) {
    int s = l->stride[dim], n = l->size[dim];
    return rank / (s * n) * s + rank % s;
}

int layout_group_members(const Layout *l, Dim dim, int group, int *members) {
    int s = l->stride[dim], n = l->size[dim];
    int first = group / s * s * n + group % s;
    for (int k = 0; k < n; k++)
        members[k] = first + k * s;
    return n;
}

int layout_group(const Layout *l, Dim dim, int rank, int *members) {
    int g = layout_group_of(l, dim, rank);
    layout_group_members(l, dim, g, members);
    return g;
}

int layout_pp_next(const Layout *l, int rank) {
    int s = l->stride[DIM_PP], stage = layout_stage(l, rank);
    if (stage + 1 < l->sh.pp)
        return rank + s;
    return l->sh.vpp > 1 && l->sh.pp > 1 ? rank - stage * s : -1;
}

int layout_pp_prev(const Layout *l, int rank) {
    int s = l->stride[DIM_PP], stage = layout_stage(l, rank);
    if (stage > 0)
        return rank - s;
    return l->sh.vpp > 1 && l->sh.pp > 1 ? rank + (l->sh.pp - 1) * s : -1;
}
