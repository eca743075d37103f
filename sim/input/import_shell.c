/* import_shell: a Megatron-LM launch script (or a bare argument list) read as bash would expand
 * it, into the settings of `sim import`.
 *
 * For: the scripts people run, such as Megatron-LM's examples/gpt3/train_gpt3_175b_distributed.sh
 * and examples/llama/train_llama3_8b_h100_fp8.sh: variable assignments (NAME=value, export,
 * declare), bash arrays (NAME=(...), NAME+=(...)), expansions ($NAME, ${NAME}, ${NAME:-default},
 * ${NAME-default}, ${NAME:=default}, ${NAME:+word}, ${NAME[@]}, ${NAME[i]}), quoting ('...',
 * "...", backslashes), line continuations, comments, word splitting of unquoted expansions (so
 * that the array element "--fp8-format hybrid" becomes two words, as in the script's unquoted
 * ${DTYPE_ARGS[@]}), and if / elif / else whose tests are string comparisons ([[ A == B ]],
 * [ A != B ], -z, -n, !, && and ||). The rules are bash's (GNU Bash Reference Manual, sections
 * 3.1.2 "Quoting", 3.4 "Shell Parameters", 3.5.3 "Shell Parameter Expansion", 3.5.7 "Word
 * Splitting", 3.2.5.2 "Conditional Constructs").
 *
 * Not for: running anything. What cannot be known without running the script (a command
 * substitution $(...) or `...`, arithmetic $((...)), the script's own arguments $1 with no
 * default, a variable the file never sets, a test of files, a loop or case) is kept as its text
 * with the reason (ImportItem.unknown), and the mapper refuses such a setting if it needs it,
 * naming it; a setting it does not need is listed as not mapped. Every `--flag` of every command
 * that runs is a setting (the torchrun line, or a bare list of arguments); a flag that Megatron-LM
 * declares with action='store_true' never takes the next word as its value. Bounded: at most
 * 4M words after expansion and 64 nested defaults; a quote, ${ or $( never closed is refused. */
#include <string.h>

#include "conf.h"
#include "import_internal.h"

typedef struct {
    char *text;
    char *unknown; /* why the text is not what bash would have (NULL: it is) */
    int line;
} Field;

static void field_free(gpointer p) {
    Field *f = p;
    g_free(f->text);
    g_free(f->unknown);
    g_free(f);
}

static Field *field_new(const char *text, const char *unknown, int line) {
    Field *f = g_new0(Field, 1);
    f->text = g_strdup(text);
    f->unknown = g_strdup(unknown);
    f->line = line;
    return f;
}

/* Bounds on what hostile text can make the reader do: fields made in all (A+=(${A[@]}) doubles
 * an array a line), text expanded in all (X=$X$X doubles a string a line) and defaults nested
 * in defaults (${a:-${a:-...}} recurses once a level). */
#define SHELL_MAX_FIELDS (1 << 22)
#define SHELL_MAX_BYTES (1 << 22)
#define SHELL_MAX_DEPTH 64

typedef struct {
    guint64 fields, bytes; /* made, and expanded into words, so far */
    gboolean over; /* past SHELL_MAX_FIELDS or SHELL_MAX_BYTES: the rest dropped, file refused */
    int depth;     /* of expand_text */
    int unclosed;  /* the line of a quote never closed (0: none), as bash refuses the file */
} Budget;

/* One word being read: the fields it expands to. */
typedef struct {
    GPtrArray *fields; /* Field */
    GString *cur;
    gboolean started; /* cur is a field even when empty ("" or '') */
    char *unknown;    /* cur's reason */
    int line;
    Budget *budget;
} Word;

typedef enum { TRI_FALSE, TRI_TRUE, TRI_UNKNOWN } Tri;

typedef struct {
    Tri state;     /* of the branch being read */
    Tri taken;     /* whether an earlier branch ran */
    gboolean cond; /* an if (else a loop or case) */
} Frame;

typedef struct {
    const char *s, *end, *path;
    int line;
    GHashTable *vars; /* name -> GPtrArray of Field (a scalar has one) */
    GArray *frames;   /* Frame */
    GPtrArray *items;
    char *cond_unknown; /* why the branch being read may not run */
    Budget *budget;
} Sh;

static void word_push(Word *w) {
    if ((w->started || w->cur->len) && ++w->budget->fields > SHELL_MAX_FIELDS)
        w->budget->over = TRUE;
    else if (w->started || w->cur->len)
        g_ptr_array_add(w->fields, field_new(w->cur->str, w->unknown, w->line));
    g_string_truncate(w->cur, 0);
    w->started = FALSE;
    g_clear_pointer(&w->unknown, g_free);
}

/* Text into the word; split: as an unquoted expansion, whose blanks separate fields. */
static void word_add(Word *w, const char *text, gboolean split, const char *unknown) {
    if (w->budget->over || (w->budget->bytes += strlen(text)) > SHELL_MAX_BYTES) {
        w->budget->over = TRUE;
        return;
    }
    if (unknown && !w->unknown)
        w->unknown = g_strdup(unknown);
    for (const char *p = text; *p;) { /* runs between blanks, appended whole */
        size_t run = split ? strcspn(p, " \t\n") : strlen(p);
        g_string_append_len(w->cur, p, (gssize)run);
        p += run;
        if (*p) { /* a blank that splits */
            word_push(w);
            p++;
        }
    }
    if (!split)
        w->started = TRUE;
}

static GPtrArray *var_get(Sh *sh, const char *name) {
    return g_hash_table_lookup(sh->vars, name);
}

static void var_set(Sh *sh, const char *name, GPtrArray *value, gboolean append) {
    GPtrArray *old = var_get(sh, name);
    if (append && old) {
        for (guint i = 0; i < value->len && !sh->budget->over; i++) {
            Field *f = value->pdata[i];
            if (++sh->budget->fields > SHELL_MAX_FIELDS)
                sh->budget->over = TRUE;
            else
                g_ptr_array_add(old, field_new(f->text, f->unknown, f->line));
        }
        g_ptr_array_unref(value);
        return;
    }
    g_hash_table_replace(sh->vars, g_strdup(name), value);
}

static gboolean is_name_start(char c) {
    return g_ascii_isalpha(c) || c == '_';
}

static gboolean read_word(Sh *sh, Word *w, gboolean in_array);

/* The text of ${...} from after "${" to its '}' (nested braces and quotes followed). */
static char *brace_body(Sh *sh) {
    const char *start = sh->s;
    int depth = 1, at = sh->line;
    while (sh->s < sh->end) {
        char c = *sh->s;
        if (c == '\\' && sh->s + 1 < sh->end) {
            sh->s += 2;
            continue;
        }
        if (c == '\n')
            sh->line++;
        if (c == '{')
            depth++;
        else if (c == '}' && --depth == 0)
            break;
        sh->s++;
    }
    char *body = g_strndup(start, sh->s - start);
    if (sh->s < sh->end)
        sh->s++; /* '}' */
    else if (!sh->budget->unclosed)
        sh->budget->unclosed = at;
    return body;
}

/* A word (a default of ${NAME:-word}) expanded on its own: its fields joined by spaces. */
static void expand_text(Sh *sh, const char *text, Word *into, gboolean quoted) {
    Sh sub = *sh;
    sub.s = text;
    sub.end = text + strlen(text);
    if (sh->budget->depth >= SHELL_MAX_DEPTH) {
        word_add(into, text, FALSE, "defaults nested more than 64 deep");
        return;
    }
    Word w = {g_ptr_array_new_with_free_func(field_free),
              g_string_new(NULL),
              FALSE,
              NULL,
              into->line,
              sh->budget};
    sh->budget->depth++;
    read_word(&sub, &w, FALSE);
    sh->budget->depth--;
    word_push(&w);
    for (guint i = 0; i < w.fields->len; i++) {
        Field *f = w.fields->pdata[i];
        if (i)
            word_add(into, " ", !quoted, NULL);
        word_add(into, f->text, !quoted, f->unknown);
    }
    g_ptr_array_unref(w.fields);
    g_string_free(w.cur, TRUE);
}

/* The value of NAME (index: NULL the whole variable as $NAME gives it, "@" or "*" every
 * element) into w. */
static void expand_var(Sh *sh, Word *w, const char *name, const char *index, gboolean quoted) {
    GPtrArray *v = var_get(sh, name);
    if (!v) {
        g_autofree char *why =
            g_ascii_isdigit(*name) || strchr("@*#", *name)
                ? g_strdup_printf("the script's arguments ($%s), given when it runs", name)
                : g_strdup_printf("$%s, which the file does not set (the environment's)", name);
        g_autofree char *text = g_strdup_printf("$%s", name);
        word_add(w, text, FALSE, why);
        return;
    }
    if (index && (!strcmp(index, "@") || !strcmp(index, "*"))) {
        for (guint i = 0; i < v->len; i++) {
            Field *f = v->pdata[i];
            if (i) { /* "${A[@]}": one field an element */
                if (quoted && !strcmp(index, "@"))
                    word_push(w);
                else
                    word_add(w, " ", !quoted, NULL);
            }
            w->line = f->line; /* a setting's place is its element's line */
            word_add(w, f->text, !quoted, f->unknown);
        }
        return;
    }
    guint64 i = 0;
    if (index && !g_ascii_string_to_unsigned(index, 10, 0, G_MAXUINT, &i, NULL)) {
        g_autofree char *why =
            g_strdup_printf("${%s[%s]}: an index that is not a number", name, index);
        word_add(w, "?", FALSE, why);
        return;
    }
    if (i < v->len) {
        Field *f = v->pdata[i];
        word_add(w, f->text, !quoted, f->unknown);
    }
}

/* At '$' (consumed): one expansion into w. */
static void expand_dollar(Sh *sh, Word *w, gboolean quoted) {
    const char *at = sh->s - 1;
    if (sh->s < sh->end && *sh->s == '(') { /* $(...) or $((...)): skip to the matching ')' */
        int depth = 0, line = sh->line;
        do {
            if (*sh->s == '(')
                depth++;
            else if (*sh->s == ')')
                depth--;
            else if (*sh->s == '\n')
                sh->line++;
            sh->s++;
        } while (sh->s < sh->end && depth > 0);
        if (depth > 0 && !sh->budget->unclosed)
            sh->budget->unclosed = line;
        g_autofree char *text = g_strndup(at, sh->s - at);
        g_autofree char *why = g_strdup_printf(
            "%s, a %s", text, at[2] == '(' ? "shell arithmetic" : "command's output");
        word_add(w, text, FALSE, why);
        return;
    }
    if (sh->s < sh->end && *sh->s == '{') {
        sh->s++;
        g_autofree char *body = brace_body(sh);
        const char *p = body;
        if (*p == '#' || *p == '!') {
            g_autofree char *text = g_strdup_printf("${%s}", body);
            g_autofree char *why = g_strdup_printf("%s, a length or indirection", text);
            word_add(w, text, FALSE, why);
            return;
        }
        while (g_ascii_isalnum(*p) || *p == '_' || (p == body && *p && strchr("@*", *p)))
            p++;
        g_autofree char *name = g_strndup(body, p - body);
        g_autofree char *index = NULL;
        if (*p == '[') {
            const char *close = strchr(p, ']');
            if (close) {
                index = g_strndup(p + 1, close - p - 1);
                p = close + 1;
            }
        }
        GPtrArray *v = var_get(sh, name);
        gboolean set = v != NULL, nonempty = v && v->len && *((Field *)v->pdata[0])->text;
        if (!*p) {
            expand_var(sh, w, name, index, quoted);
        } else if (!strncmp(p, ":-", 2) || *p == '-' || !strncmp(p, ":=", 2) || *p == '=') {
            gboolean colon = *p == ':';
            const char *word = p + (colon ? 2 : 1);
            if (colon ? nonempty : set) {
                expand_var(sh, w, name, index, quoted);
            } else {
                expand_text(sh, word, w, quoted);
                if (p[colon] == '=') {
                    GPtrArray *val = g_ptr_array_new_with_free_func(field_free);
                    g_ptr_array_add(val, field_new(word, NULL, w->line));
                    var_set(sh, name, val, FALSE);
                }
            }
        } else if (!strncmp(p, ":+", 2) || *p == '+') {
            if (*p == ':' ? nonempty : set)
                expand_text(sh, p + (*p == ':' ? 2 : 1), w, quoted);
        } else {
            g_autofree char *text = g_strdup_printf("${%s}", body);
            g_autofree char *why =
                g_strdup_printf("%s, an expansion this reader does not do", text);
            word_add(w, text, FALSE, why);
        }
        return;
    }
    const char *start = sh->s;
    if (sh->s < sh->end && (g_ascii_isdigit(*sh->s) || strchr("@*#?$!-", *sh->s))) {
        sh->s++;
    } else if (sh->s < sh->end && is_name_start(*sh->s)) {
        while (sh->s < sh->end && (g_ascii_isalnum(*sh->s) || *sh->s == '_'))
            sh->s++;
    } else {
        word_add(w, "$", FALSE, NULL); /* a lone '$' is itself */
        return;
    }
    g_autofree char *name = g_strndup(start, sh->s - start);
    expand_var(sh, w, name, NULL, quoted);
}

static gboolean is_blank(char c) {
    return c == ' ' || c == '\t' || c == '\r';
}

/* One word at sh->s into w (fields pushed as they end). Stops at an unquoted blank, newline or
 * operator (; & | < > ( ), and ')' ends an array). FALSE when there was no word. */
static gboolean read_word(Sh *sh, Word *w, gboolean in_array) {
    const char *start = sh->s;
    while (sh->s < sh->end) {
        char c = *sh->s;
        if (c == '\\' && sh->s + 1 < sh->end) {
            if (sh->s[1] == '\n') {
                sh->line++;
                sh->s += 2;
                if (sh->s - 2 == start)
                    start = sh->s;
                continue;
            }
            char lit[2] = {sh->s[1], 0};
            word_add(w, lit, FALSE, NULL);
            sh->s += 2;
            continue;
        }
        if (is_blank(c) || c == '\n' || strchr(";&|<>()", c))
            break;
        sh->s++;
        if (c == '\'') {
            const char *q = sh->s;
            while (sh->s < sh->end && *sh->s != '\'')
                sh->line += *sh->s++ == '\n';
            g_autofree char *lit = g_strndup(q, sh->s - q);
            word_add(w, lit, FALSE, NULL);
            if (sh->s < sh->end)
                sh->s++;
            else if (!w->budget->unclosed)
                w->budget->unclosed = w->line;
        } else if (c == '"') {
            w->started = TRUE;
            while (sh->s < sh->end && *sh->s != '"') {
                char d = *sh->s++;
                if (d == '\\' && sh->s < sh->end && strchr("$`\"\\\n", *sh->s)) {
                    if (*sh->s != '\n') {
                        char lit[2] = {*sh->s, 0};
                        word_add(w, lit, FALSE, NULL);
                    } else {
                        sh->line++;
                    }
                    sh->s++;
                } else if (d == '$') {
                    expand_dollar(sh, w, TRUE);
                } else if (d == '`') {
                    while (sh->s < sh->end && *sh->s != '`')
                        sh->s++;
                    sh->s += sh->s < sh->end;
                    word_add(w, "`...`", FALSE, "`...`, a command's output");
                } else {
                    sh->line += d == '\n';
                    char lit[2] = {d, 0};
                    word_add(w, lit, FALSE, NULL);
                }
            }
            if (sh->s < sh->end)
                sh->s++;
            else if (!w->budget->unclosed)
                w->budget->unclosed = w->line;
        } else if (c == '$') {
            expand_dollar(sh, w, FALSE);
        } else if (c == '`') {
            while (sh->s < sh->end && *sh->s != '`')
                sh->s++;
            sh->s += sh->s < sh->end;
            word_add(w, "`...`", FALSE, "`...`, a command's output");
        } else {
            char lit[2] = {c, 0};
            word_add(w, lit, FALSE, NULL);
        }
    }
    (void)in_array;
    word_push(w);
    return sh->s > start;
}

/* --- commands ------------------------------------------------------------------------------- */

/* Megatron-LM's flags declared with action='store_true' (megatron/training/arguments.py) that
 * a launch script commonly passes: they never take the next word as a value, so that
 * `--overlap-param-gather torchrun` is not read as a value. Normalised ('-' as '_'). */
static const char store_true[] =
    " bf16 fp16 fp8_hybrid fp8_e4m3 swiglu squared_relu disable_bias_linear "
    "untie_embeddings_and_output_weights "
    "sequence_parallel use_distributed_optimizer use_flash_attn group_query_attention "
    "overlap_grad_reduce overlap_param_gather use_mcore_models use_legacy_models "
    "no_masked_softmax_fusion no_bias_gelu_fusion no_bias_dropout_fusion "
    "no_bias_swiglu_fusion no_gradient_accumulation_fusion recompute_activations "
    "apply_query_key_layer_scaling use_rotary_position_embeddings add_qkv_bias "
    "apply_layernorm_1p no_persist_layer_norm tp_comm_overlap use_cpu_initialization "
    "moe_grouped_gemm log_throughput no_load_optim no_load_rng mock_data fp8_param_gather "
    "grad_reduce_in_bf16 cross_entropy_loss_fusion calculate_per_token_loss manual_gc "
    "qk_layernorm log_params_norm log_num_zeros_in_grad log_timers_to_tensorboard "
    "log_validation_ppl_to_tensorboard log_memory_to_tensorboard async_save "
    "ckpt_fully_parallel_load use_checkpoint_args no_async_tensor_model_parallel_allreduce "
    "use_precision_aware_optimizer no_create_attention_mask_in_dataloader "
    "check_for_nan_in_loss_and_grad distribute_saved_activations use_torch_fsdp2 "
    "account_for_embedding_in_pipeline_split account_for_loss_in_pipeline_split "
    "moe_router_pre_softmax add_bias_linear overlap_p2p_communication no_rope_fusion "
    "no_overlap_p2p_communication ";

/* Whether a normalised flag name is among store_true's (words between single spaces). */
static gboolean is_store_true(const char *norm) {
    g_autofree char *word = g_strdup_printf(" %s ", norm);
    return strstr(store_true, word) != NULL;
}

static Tri effective(const Sh *sh) {
    Tri t = TRI_TRUE;
    for (guint i = 0; i < sh->frames->len; i++) {
        Tri s = g_array_index(sh->frames, Frame, i).state;
        if (s == TRI_FALSE)
            return TRI_FALSE;
        if (s == TRI_UNKNOWN)
            t = TRI_UNKNOWN;
    }
    return t;
}

/* One test command ([[ A == B ]], [ -z A ], ...) from its fields. */
static Tri eval_test(GPtrArray *f) {
    guint n = f->len;
    if (n < 2)
        return TRI_UNKNOWN;
    const char *first = ((Field *)f->pdata[0])->text, *last = ((Field *)f->pdata[n - 1])->text;
    if (!((!strcmp(first, "[[") && !strcmp(last, "]]")) ||
          (!strcmp(first, "[") && !strcmp(last, "]"))))
        return TRI_UNKNOWN;
    guint a = 1, b = n - 1; /* the operands: [a, b) */
    gboolean neg = FALSE;
    if (b > a && !strcmp(((Field *)f->pdata[a])->text, "!"))
        neg = TRUE, a++;
    for (guint i = a; i < b; i++)
        if (((Field *)f->pdata[i])->unknown)
            return TRI_UNKNOWN;
    const char *x = b > a ? ((Field *)f->pdata[a])->text : NULL;
    gboolean v;
    if (b - a == 3) {
        const char *op = ((Field *)f->pdata[a + 1])->text, *y = ((Field *)f->pdata[a + 2])->text;
        if (!strcmp(op, "==") || !strcmp(op, "="))
            v = strcmp(x, y) == 0;
        else if (!strcmp(op, "!="))
            v = strcmp(x, y) != 0;
        else
            return TRI_UNKNOWN;
    } else if (b - a == 2 && !strcmp(x, "-z")) {
        v = !*((Field *)f->pdata[a + 1])->text;
    } else if (b - a == 2 && !strcmp(x, "-n")) {
        v = *((Field *)f->pdata[a + 1])->text != '\0';
    } else {
        return TRI_UNKNOWN;
    }
    return (v != neg) ? TRI_TRUE : TRI_FALSE;
}

static Tri tri_join(Tri acc, Tri t, char conn) {
    if (conn == '&')
        return acc == TRI_FALSE || t == TRI_FALSE ? TRI_FALSE
               : acc == TRI_TRUE && t == TRI_TRUE ? TRI_TRUE
                                                  : TRI_UNKNOWN;
    return acc == TRI_TRUE || t == TRI_TRUE     ? TRI_TRUE
           : acc == TRI_FALSE && t == TRI_FALSE ? TRI_FALSE
                                                : TRI_UNKNOWN;
}

typedef struct {
    gboolean active; /* reading an if's or elif's test */
    gboolean elif;
    Tri acc;
    int line;
} Cond;

static const char *branch_reason(Sh *sh, int line) {
    g_free(sh->cond_unknown);
    sh->cond_unknown = g_strdup_printf(
        "a line that runs only if a test the file cannot settle holds (the block at line %d)",
        line);
    return sh->cond_unknown;
}

static void add_settings(Sh *sh, GPtrArray *f) {
    const char *branch = effective(sh) == TRI_UNKNOWN ? sh->cond_unknown : NULL;
    for (guint i = 0; i < f->len; i++) {
        Field *fl = f->pdata[i];
        if (!g_str_has_prefix(fl->text, "--") || !fl->text[2])
            continue;
        g_autofree char *flag = g_strdup(fl->text);
        char *eq = strchr(flag, '=');
        if (eq)
            *eq = '\0';
        g_autofree char *norm = g_ascii_strdown(flag + 2, -1);
        g_strdelimit(norm, "-", '_');
        const char *value = eq ? eq + 1 : "true";
        const char *unknown = fl->unknown;
        Field *next = i + 1 < f->len ? f->pdata[i + 1] : NULL;
        if (!eq && next && !g_str_has_prefix(next->text, "--") && !is_store_true(norm)) {
            value = next->text;
            unknown = unknown ? unknown : next->unknown;
            i++;
        }
        ImportItem *it = import_item_add(sh->items, flag + 2, value,
                                         g_strdup_printf("%s:%d: %s", sh->path, fl->line, flag));
        it->unknown = g_strdup(unknown ? unknown : branch);
    }
}

/* One command's fields (after its assignments), with the connector before it (';', '&' for &&,
 * '|' for ||). */
static void run_command(Sh *sh, Cond *c, GPtrArray *f, char conn) {
    while (f->len) {
        const char *w = ((Field *)f->pdata[0])->text;
        int line = ((Field *)f->pdata[0])->line;
        Frame *top =
            sh->frames->len ? &g_array_index(sh->frames, Frame, sh->frames->len - 1) : NULL;
        if (c->active && strcmp(w, "then") != 0) {
            c->acc = tri_join(c->acc, eval_test(f), conn);
            return;
        }
        if (!strcmp(w, "if") || !strcmp(w, "elif")) {
            gboolean elif = w[0] == 'e';
            g_ptr_array_remove_index(f, 0); /* frees w */
            *c = (Cond){TRUE, elif, eval_test(f), line};
            return;
        }
        if (!strcmp(w, "then") && c->active) {
            c->active = FALSE;
            if (!c->elif || !top) {
                Frame fr = {c->acc, c->acc, TRUE};
                g_array_append_val(sh->frames, fr);
            } else {
                top->state = top->taken == TRI_TRUE    ? TRI_FALSE
                             : top->taken == TRI_FALSE ? c->acc
                             : c->acc == TRI_FALSE     ? TRI_FALSE
                                                       : TRI_UNKNOWN;
                top->taken = tri_join(top->taken, c->acc, '|');
            }
            if (c->acc == TRI_UNKNOWN)
                branch_reason(sh, c->line);
        } else if (!strcmp(w, "else") && top) {
            top->state = top->taken == TRI_TRUE    ? TRI_FALSE
                         : top->taken == TRI_FALSE ? TRI_TRUE
                                                   : TRI_UNKNOWN;
            if (top->state == TRI_UNKNOWN)
                branch_reason(sh, line);
        } else if (!strcmp(w, "fi") || !strcmp(w, "done") || !strcmp(w, "esac")) {
            if (top)
                g_array_set_size(sh->frames, sh->frames->len - 1);
        } else if (!strcmp(w, "for") || !strcmp(w, "while") || !strcmp(w, "until") ||
                   !strcmp(w, "case") || !strcmp(w, "select")) {
            Frame fr = {TRI_UNKNOWN, TRI_UNKNOWN, FALSE};
            g_array_append_val(sh->frames, fr);
            branch_reason(sh, line);
            return; /* the header: a list or a test, not settings */
        } else if (strcmp(w, "do") && strcmp(w, "{") && strcmp(w, "}") && strcmp(w, "then")) {
            break;
        }
        g_ptr_array_remove_index(f, 0);
    }
    if (!f->len || effective(sh) == TRI_FALSE)
        return;
    const char *w = ((Field *)f->pdata[0])->text;
    if (!strcmp(w, "exit") && effective(sh) == TRI_TRUE) {
        sh->s = sh->end; /* the rest never runs */
        return;
    }
    if (!strcmp(w, "echo") || !strcmp(w, "printf"))
        return;
    add_settings(sh, f);
}

/* At NAME= or NAME+= (at a command's start): the assignment read and made. */
static void assign(Sh *sh) {
    const char *start = sh->s;
    while (g_ascii_isalnum(*sh->s) || *sh->s == '_')
        sh->s++;
    g_autofree char *name = g_strndup(start, sh->s - start);
    gboolean append = *sh->s == '+';
    sh->s += append ? 2 : 1;
    int line = sh->line;
    GPtrArray *val = g_ptr_array_new_with_free_func(field_free);
    Word w = {val, g_string_new(NULL), FALSE, NULL, line, sh->budget};
    if (sh->s < sh->end && *sh->s == '(') { /* an array: its words, across lines */
        sh->s++;
        while (sh->s < sh->end && *sh->s != ')') {
            char c = *sh->s;
            if (c == '\n' || is_blank(c)) {
                sh->line += c == '\n';
                sh->s++;
            } else if (c == '\\' && sh->s + 1 < sh->end && sh->s[1] == '\n') {
                sh->line++;
                sh->s += 2;
            } else if (c == '#') {
                while (sh->s < sh->end && *sh->s != '\n')
                    sh->s++;
            } else {
                w.line = sh->line;
                if (!read_word(sh, &w, TRUE))
                    sh->s++; /* an operator inside the list: not a word */
            }
        }
        sh->s += sh->s < sh->end;
    } else {
        /* a scalar: no word splitting in an assignment (Bash manual 3.4) */
        GPtrArray *parts = g_ptr_array_new_with_free_func(field_free);
        Word one = {parts, g_string_new(NULL), FALSE, NULL, line, sh->budget};
        read_word(sh, &one, FALSE);
        GString *joined = g_string_new(NULL);
        char *unknown = NULL;
        for (guint i = 0; i < parts->len; i++) {
            Field *f = parts->pdata[i];
            g_string_append_printf(joined, "%s%s", i ? " " : "", f->text);
            if (f->unknown && !unknown)
                unknown = f->unknown;
        }
        g_ptr_array_add(val, field_new(joined->str, unknown, line));
        g_string_free(joined, TRUE);
        g_ptr_array_unref(parts);
        g_string_free(one.cur, TRUE);
    }
    g_string_free(w.cur, TRUE);
    Tri e = effective(sh);
    if (e == TRI_FALSE) {
        g_ptr_array_unref(val);
        return;
    }
    if (e == TRI_UNKNOWN)
        for (guint i = 0; i < val->len; i++) {
            Field *f = val->pdata[i];
            if (!f->unknown)
                f->unknown = g_strdup(sh->cond_unknown);
        }
    if (e == TRI_UNKNOWN && !append) {
        /* maybe set, maybe not: the old value and the new one both kept, every element
         * uncertain (B=() in an else must not hide the B=(--bf16) of its if) */
        GPtrArray *old = var_get(sh, name);
        for (guint i = 0; old && i < old->len; i++) {
            Field *f = old->pdata[i];
            if (!f->unknown)
                f->unknown = g_strdup(sh->cond_unknown);
        }
        append = TRUE;
    }
    var_set(sh, name, val, append);
}

/* Whether cmd holds only words that open a list (then, do, else, {): an assignment may follow. */
static gboolean only_openers(GPtrArray *cmd) {
    static const char *const openers[] = {"then", "do", "else", "{", NULL};
    for (guint i = 0; i < cmd->len; i++)
        if (!g_strv_contains(openers, ((Field *)cmd->pdata[i])->text))
            return FALSE;
    return TRUE;
}

static gboolean at_assignment(const Sh *sh) {
    const char *p = sh->s;
    if (p >= sh->end || !is_name_start(*p))
        return FALSE;
    while (p < sh->end && (g_ascii_isalnum(*p) || *p == '_'))
        p++;
    return p < sh->end && (*p == '=' || (*p == '+' && p + 1 < sh->end && p[1] == '='));
}

gboolean import_read_shell(const char *path, const char *text, gsize len, GPtrArray *items,
                           GError **err) {
    Budget budget = {0};
    Sh sh = {text,  text + len, path,   1, NULL, g_array_new(FALSE, FALSE, sizeof(Frame)),
             items, NULL,       &budget};
    sh.vars =
        g_hash_table_new_full(g_str_hash, g_str_equal, g_free, (GDestroyNotify)g_ptr_array_unref);
    Cond cond = {0};
    GPtrArray *cmd = g_ptr_array_new_with_free_func(field_free);
    char conn = ';', next = ';';
    gboolean declare = FALSE; /* after export / declare / local / readonly */
    while (sh.s <= sh.end && !budget.over) {
        char c = sh.s < sh.end ? *sh.s : '\n';
        if (is_blank(c)) {
            sh.s++;
            continue;
        }
        if (c == '\\' && sh.s + 1 < sh.end && sh.s[1] == '\n') {
            sh.line++;
            sh.s += 2;
            continue;
        }
        if (c == '#') {
            while (sh.s < sh.end && *sh.s != '\n')
                sh.s++;
            continue;
        }
        if (c == '\n' || c == ';' || c == '&' || c == '|') {
            next = ';';
            if ((c == '&' || c == '|') && sh.s + 1 < sh.end && sh.s[1] == c)
                next = c, sh.s++;
            gboolean last = sh.s >= sh.end;
            sh.line += c == '\n' && !last;
            sh.s++;
            run_command(&sh, &cond, cmd, conn);
            g_ptr_array_set_size(cmd, 0);
            conn = next;
            declare = FALSE;
            if (last)
                break;
            continue;
        }
        if (c == '(' || c == ')') {
            sh.s++;
            continue;
        }
        if (c == '<' || c == '>') { /* a redirection: its target is no argument */
            while (sh.s < sh.end && strchr("<>&", *sh.s))
                sh.s++;
            while (sh.s < sh.end && is_blank(*sh.s))
                sh.s++;
            Word w = {g_ptr_array_new_with_free_func(field_free),
                      g_string_new(NULL),
                      FALSE,
                      NULL,
                      sh.line,
                      sh.budget};
            read_word(&sh, &w, FALSE);
            g_ptr_array_unref(w.fields);
            g_string_free(w.cur, TRUE);
            continue;
        }
        if ((only_openers(cmd) || declare) && at_assignment(&sh)) {
            assign(&sh);
            continue;
        }
        Word w = {cmd, g_string_new(NULL), FALSE, NULL, sh.line, sh.budget};
        guint before = cmd->len;
        if (!read_word(&sh, &w, FALSE))
            sh.s++;
        g_string_free(w.cur, TRUE);
        if (before == 0 && cmd->len == 1 && only_openers(cmd)) {
            /* then, do, else open a list whose commands (and assignments) run in the branch */
            run_command(&sh, &cond, cmd, conn);
            g_ptr_array_set_size(cmd, 0);
            conn = ';';
        } else if (before == 0 && cmd->len == 1) {
            const char *first = ((Field *)cmd->pdata[0])->text;
            declare = !strcmp(first, "export") || !strcmp(first, "declare") ||
                      !strcmp(first, "local") || !strcmp(first, "readonly") ||
                      !strcmp(first, "typeset");
            if (declare)
                g_ptr_array_set_size(cmd, 0);
        } else if (declare && cmd->len && ((Field *)cmd->pdata[cmd->len - 1])->text[0] == '-') {
            g_ptr_array_set_size(cmd, cmd->len - 1); /* declare's own options (-a, -x) */
        }
    }
    g_ptr_array_unref(cmd);
    g_hash_table_destroy(sh.vars);
    g_array_free(sh.frames, TRUE);
    g_free(sh.cond_unknown);
    if (budget.over)
        g_set_error(err, CONF_ERROR, CONF_ERROR_VALUE,
                    "%s:%d: more than %d words or %d MiB of text once its variables are "
                    "expanded; a launch script has far fewer",
                    path, sh.line, SHELL_MAX_FIELDS, SHELL_MAX_BYTES >> 20);
    else if (budget.unclosed)
        g_set_error(err, CONF_ERROR, CONF_ERROR_PARSE,
                    "%s:%d: a quote, ${ or $( opened here is never closed (bash refuses the file)",
                    path, budget.unclosed);
    return !budget.over && !budget.unclosed;
}
