/* cmd_generate.c -- `attn generate`: greedy decoding with seq2seq weights (write-up §6), one
 * source per forward on one BLAS thread; or, with --teacher, the teacher-forced logits of given
 * 'source<TAB>target' pairs (what PyTorch's nn.Transformer computes for [BOS] + target, bit for
 * bit). Sources (and --samples' draws) are decoded on --threads threads, each on its own copy
 * of the model's run state (attn_seq2seq_replica), and printed in input order: the output is
 * the same for every thread count (cli_run_pieces_pool). */
#include "attn_seq2seq.h"
#include "cli.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { FORMAT_TEXT, FORMAT_JSON };
#define GEN_MAX_BATCH 1024 /* --batch: sources held and decoded together at most */

static const char about[] =
    "Rewrites each SOURCE (or, without arguments, each non-blank line of stdin) with a\n"
    "seq2seq model: greedy decoding from [BOS], the most probable word at each step, until\n"
    "[EOS]. Text prints the output words; json one object per source with each step's token,\n"
    "probability and logits.";

static const char notes[] =
    "Decoding: by default each step computes only the new row, with the self-attention keys\n"
    "and values of the earlier rows kept (a KV cache); --no-cache recomputes the decoder over\n"
    "the whole prefix at every step, which is exactly what a PyTorch loop over nn.Transformer\n"
    "computes (same tokens, same per-step logits bit for bit). The two agree up to rounding:\n"
    "docs/decoder.md measures by how much. The GRU models' decoder is incremental: the\n"
    "cache and --no-cache give the same bits.\n\n"
    "--min-len N leaves [EOS] out of the argmax at the first N steps (as if its logit were\n"
    "-inf), so that every output has at least N words: a fixed decode length for timing\n"
    "(--min-len N --max-len N), whatever the model would stop at; tools/seq2seq_models.py's\n"
    "greedy loops take the same min_out. The printed logits stay the model's.\n\n"
    "--batch B decodes B sources at a time together with the KV cache (their decoder rows\n"
    "through each product at once, a finished source leaving the step), on one thread, and\n"
    "prints them in input order. A source's words are then those of the same batch in\n"
    "tools/seq2seq_models.greedy_batch; against the source decoded alone they agree up to\n"
    "the rounding of [B, D] products against [1, D] ones (docs/decoder.md).\n\n"
    "json: {\"source\", \"output\", \"steps\": [{\"token\", \"probability\", \"logits\": [..]}]};\n"
    "with --teacher each SOURCE (or line) is 'source<TAB>target', as attn data --task rewrite\n"
    "prints, and the output is {\"source\", \"target\", \"logits\": [[..] per row of [BOS] +\n"
    "target], and for seq2seq-attn \"alignment\": [[..] per row, over the source]}\n"
    "(%.9g floats). Sources use the built-in vocabulary; targets the target\n"
    "vocabulary (docs/decoder.md).\n\n"
    "--beam K keeps the K best hypotheses by summed log-probability at every step and answers\n"
    "the finished one with the best score per token ([EOS] counted); json adds \"score\"\n"
    "(that normalised score, %.17g). It runs on the recomputing decoder.\n\n"
    "Sampling (any of --temperature, --top-k, --top-p, --seed): each step draws the next\n"
    "token from softmax(logits / T) cut to the top K and then to the top P of probability,\n"
    "with a splitmix64 generator seeded with S for each source; tools/seq2seq_models.py\n"
    "draws the same tokens (docs/decoder.md).\n\n"
    "Compose models (attn train --task compose): each SOURCE is '<polarity> <subject>'\n"
    "('positive exam'), the output a review sentence; after each output a line (text:\n"
    "'  judged: ...'; json: \"judged\") says whether the grammar parser reads it as a sentence\n"
    "of the task's grammar, and its polarity and subject against the ones asked for.\n\n"
    "--threads N decodes N sources (or --samples draws) at a time, each one exactly as a\n"
    "single thread does, and prints them in input order: the output is the same for every N.";

typedef struct gen_ctx {
    attn_seq2seq **models; /* per thread: the model, then replicas of it */
    bool cache;
    int fmt, max_out;
    int min_out;  /* --min-len N: [EOS] left out of the argmax at the first N steps */
    bool teacher; /* --teacher: teacher-forced logits of source<TAB>target instead of decoding */
    int beam;     /* --beam K: beam search of width K (0: greedy) */
    bool sample;  /* --temperature/--top-k/--top-p/--seed: sampling with `sampling` */
    attn_s2s_sampling sampling;
    int samples; /* --samples N: N draws per source, seeds S..S+N-1 */
} gen_ctx;

/* p(token) = softmax(logits)[token], in double. */
static double probability(const float *logits, int V, int token) {
    double m = logits[0], s = 0.0;
    for (int j = 1; j < V; j++) m = logits[j] > m ? logits[j] : m;
    for (int j = 0; j < V; j++) s += exp((double)logits[j] - m);
    return exp((double)logits[token] - m) / s;
}

/* The output words, separated by single spaces. */
static void print_words(FILE *f, const int *out, int n_out) {
    for (int i = 0; i < n_out; i++) fprintf(f, i ? " %s" : "%s", attn_tgt_vocab_token(out[i]));
}

/* json: the "output" member, the output words separated by single spaces. */
static void json_words(attn_json_writer *w, const int *out, int n_out) {
    char text[ATTN_S2S_MAX_TGT * 32] = "";
    size_t len = 0;
    for (int i = 0; i < n_out; i++) {
        const char *t = attn_tgt_vocab_token(out[i]);
        const size_t n = strlen(t);
        if (len + n + 2 > sizeof text) {
            attn_json_writer_fail(w, ATTN_ERR_ARG, "an output too long to write");
            return;
        }
        if (i) text[len++] = ' ';
        memcpy(text + len, t, n + 1);
        len += n;
    }
    attn_json_field_string(w, "output", text);
}

static bool print_output(FILE *f, FILE *msg, const gen_ctx *g, const char *source, const int *src,
                         const int *out, int n_out, const float *step_logits, int n_steps) {
    const int V = attn_seq2seq_config_of(g->models[0])->tgt_vocab;
    const bool compose = attn_seq2seq_config_of(g->models[0])->task == ATTN_TASK_COMPOSE;
    if (g->fmt == FORMAT_TEXT) {
        print_words(f, out, n_out);
        fputc('\n', f);
        if (compose) cli_generate_print_judgement(f, src, out, n_out);
        return true;
    }
    attn_json_writer w;
    attn_json_writer_init(&w, f);
    attn_json_begin_object(&w);
    attn_json_field_string(&w, "source", source);
    json_words(&w, out, n_out);
    attn_json_begin_array_field(&w, "steps");
    for (int s = 0; s < n_steps; s++) {
        const int token = s < n_out ? out[s] : ATTN_TGT_EOS;
        const float *l = step_logits + (size_t)s * V;
        attn_json_begin_object(&w);
        attn_json_field_string(&w, "token", attn_tgt_vocab_token(token));
        attn_json_field_double(&w, "probability", probability(l, V, token));
        attn_json_key(&w, "logits");
        cli_json_floats(&w, l, V);
        attn_json_end_object(&w);
    }
    attn_json_end_array(&w);
    if (compose) cli_generate_json_judgement(&w, src, out, n_out);
    return cli_generate_json_done(&w, f, msg);
}

/* Reads a source on the reading thread: one piece per --samples draw, else one. */
static void *generate_prepare(void *ctx, const char *line, const char *where, int index,
                              int *n_pieces, FILE *msg) {
    const gen_ctx *g = ctx;
    const attn_task task = attn_seq2seq_config_of(g->models[0])->task;
    cli_s2s_source *s = cli_s2s_source_read("generate", task, line, g->teacher, where, index, msg);
    *n_pieces = g->sample ? g->samples : 1;
    return s;
}

static bool generate_beam(FILE *f, FILE *msg, const gen_ctx *g, attn_seq2seq *m,
                          const cli_s2s_source *s) {
    int out[ATTN_S2S_MAX_TGT], n_out = 0;
    double score = 0.0;
    attn_error err;
    if (attn_seq2seq_beam(m, s->src, s->n_src, g->max_out, g->beam, out, &n_out, &score, &err) !=
        ATTN_OK) {
        cli_message_to(msg, "generate", "%s %d: %s", s->where, s->index, err.msg);
        return false;
    }
    if (g->fmt == FORMAT_TEXT)
        return print_output(f, msg, g, s->source, s->src, out, n_out, NULL, 0);
    attn_json_writer w;
    attn_json_writer_init(&w, f);
    attn_json_begin_object(&w);
    attn_json_field_string(&w, "source", s->source);
    json_words(&w, out, n_out);
    attn_json_field_int(&w, "beam", g->beam);
    attn_json_key(&w, "score");
    attn_json_digits(&w, score, 17);
    if (attn_seq2seq_config_of(m)->task == ATTN_TASK_COMPOSE)
        cli_generate_json_judgement(&w, s->src, out, n_out);
    return cli_generate_json_done(&w, f, msg);
}

/* Piece k of a source on thread `worker`: draw k (seed S + k) when sampling, else the one
 * decoding (or teacher-forced pass); output on f, messages on msg. */
static bool generate_compute(void *ctx, int worker, void *state, int k, FILE *f, FILE *msg) {
    const gen_ctx *g = ctx;
    const cli_s2s_source *s = state;
    attn_seq2seq *m = g->models[worker];
    if (g->beam > 0) return generate_beam(f, msg, g, m, s);
    if (g->teacher)
        return cli_generate_score_target(f, msg, m, s->source, s->target, s->src, s->n_src);
    const int V = attn_seq2seq_config_of(m)->tgt_vocab;
    int out[ATTN_S2S_MAX_TGT], n_out = 0, n_steps = 0;
    float *steps = malloc((size_t)(g->max_out + 1) * V * sizeof *steps);
    attn_s2s_sampling sampling = g->sampling;
    sampling.seed += (uint64_t)k;
    attn_error err;
    const bool ok =
        steps &&
        (g->sample ? attn_seq2seq_sample(m, s->src, s->n_src, g->max_out, g->cache, &sampling, out,
                                         &n_out, steps, &n_steps, &err)
                   : attn_seq2seq_greedy_min(m, s->src, s->n_src, g->min_out, g->max_out, g->cache,
                                             out, &n_out, steps, &n_steps, &err)) == ATTN_OK;
    if (!ok)
        cli_message_to(msg, "generate", "%s %d: %s", s->where, s->index,
                       steps ? err.msg : "out of memory");
    const bool printed =
        ok && print_output(f, msg, g, s->source, s->src, out, n_out, steps, n_steps);
    free(steps);
    return printed;
}

/* --batch: the k prepared sources decoded together (attn_seq2seq_greedy_batch) and printed in
 * order; the number that failed. */
static int generate_group(const gen_ctx *g, cli_s2s_source **got, int k) {
    attn_seq2seq *m = g->models[0];
    const int V = attn_seq2seq_config_of(m)->tgt_vocab, per = g->max_out + 1;
    const int **src = malloc((size_t)k * sizeof *src);
    int *n_src = malloc(3 * (size_t)k * sizeof *n_src),
        *out = malloc((size_t)k * g->max_out * sizeof(int));
    float *steps = malloc((size_t)k * per * V * sizeof *steps);
    attn_error err;
    attn_status st =
        src && n_src && out && steps ? ATTN_OK : attn_errorf(&err, ATTN_ERR_NOMEM, "out of memory");
    int *n_out = n_src ? n_src + k : NULL, *n_steps = n_src ? n_src + 2 * k : NULL;
    for (int i = 0; st == ATTN_OK && i < k; i++) {
        src[i] = got[i]->src;
        n_src[i] = got[i]->n_src;
    }
    if (st == ATTN_OK)
        st = attn_seq2seq_greedy_batch(m, k, src, n_src, g->min_out, g->max_out, out, n_out, steps,
                                       n_steps, &err);
    int failed = 0;
    for (int i = 0; i < k; i++) {
        const cli_s2s_source *s = got[i];
        if (st != ATTN_OK) {
            cli_message("generate", "%s %d: %s", s->where, s->index, err.msg);
            failed++;
        } else if (!print_output(stdout, stderr, g, s->source, s->src, out + (size_t)i * g->max_out,
                                 n_out[i], steps + (size_t)i * per * V, n_steps[i])) {
            failed++;
        }
        cli_s2s_source_free(got[i]);
    }
    free(src);
    free(n_src);
    free(out);
    free(steps);
    return failed;
}

/* --batch B: the sources (args, else the non-blank lines of stdin) read in input order and
 * decoded B at a time on this thread. */
static int generate_batched(gen_ctx *g, int B, char **args, int n_args) {
    cli_s2s_source **got = malloc((size_t)B * sizeof *got);
    if (!got) {
        cli_message("generate", "out of memory");
        return CLI_ERROR;
    }
    int k = 0, failed = 0, n = 0, line_no = 0, n_pieces;
    char *line = NULL;
    size_t cap = 0;
    for (int i = 0; i < n_args || (n_args == 0 && !feof(stdin)); i++) {
        const char *text = NULL, *where = "sentence";
        int index = i + 1;
        if (n_args > 0) {
            text = args[i];
        } else {
            ssize_t len = getline(&line, &cap, stdin);
            if (len < 0) break;
            index = ++line_no;
            where = "line";
            while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r')) line[--len] = 0;
            if (strspn(line, " \t") == (size_t)len) continue; /* blank lines are skipped */
            if (strlen(line) != (size_t)len) {                /* never a cut line */
                cli_message("generate", "line %d: NUL byte in line", line_no);
                n++, failed++;
                continue;
            }
            text = line;
        }
        n++;
        cli_s2s_source *s = generate_prepare(g, text, where, index, &n_pieces, stderr);
        if (!s) {
            failed++;
            continue;
        }
        got[k++] = s;
        if (k == B) failed += generate_group(g, got, k), k = 0;
    }
    if (k > 0) failed += generate_group(g, got, k);
    free(line);
    free(got);
    return cli_lines_finish("generate", "rewritten", failed, n);
}

/* The run once the model is loaded: max_out checked against what the model writes at most (its
 * default), then the
 * sources in batches (--batch) or as pieces on the pool. */
static int generate_run(gen_ctx *g, int batch, char **sources, int n_sources, attn_pool *pool) {
    int cap = attn_seq2seq_config_of(g->models[0])->max_tgt_len - 1;
    cap = cap < ATTN_S2S_MAX_TGT ? cap : ATTN_S2S_MAX_TGT;
    if (g->max_out > cap)
        return cli_usage_error("generate",
                               "--max-len %d is more than the %d output words this model "
                               "writes at most (max_tgt_len - 1)",
                               g->max_out, cap);
    if (g->max_out == 0) g->max_out = cap;
    if (g->min_out > g->max_out)
        return cli_usage_error("generate",
                               "--min-len %d is more than the %d output words this model "
                               "writes at most (max_tgt_len - 1)",
                               g->min_out, g->max_out);
    if (batch > 1) return generate_batched(g, batch, sources, n_sources);
    const cli_piece_spec ps = {"generate",       "rewritten",         generate_prepare,
                               generate_compute, cli_s2s_source_free, g};
    return cli_run_pieces_pool(&ps, sources, n_sources, pool);
}

/* -1 when the options of the run g (and --batch B) go together, else the usage error's exit
 * code after its message. */
static int check_choice(cli_spec *spec, const gen_ctx *g, int batch) {
    const bool sample = g->sample, beam = g->beam > 0, teacher = g->teacher;
    if (g->sampling.top_p > 1.0) return cli_usage_error("generate", "--top-p expects 0 < P <= 1");
    if (sample && (beam || teacher))
        return cli_usage_error("generate", "sampling goes with neither --beam nor --teacher");
    if (beam && (teacher || !g->cache))
        return cli_usage_error("generate", "--beam goes with neither --teacher nor --no-cache");
    if (cli_given(spec, "--min-len") && (sample || beam || teacher))
        return cli_usage_error("generate", "--min-len is greedy decoding's: it goes with neither "
                                           "--beam, sampling nor --teacher");
    if (batch > 1 && (sample || beam || teacher || !g->cache))
        return cli_usage_error("generate",
                               "--batch is greedy decoding with the KV cache: it goes "
                               "with neither --beam, sampling, --teacher nor --no-cache");
    if (batch > 1 && cli_given(spec, "--threads"))
        return cli_usage_error("generate", "--batch decodes on one thread: drop --threads");
    if (cli_given(spec, "--max-len") && g->min_out > g->max_out)
        return cli_usage_error("generate", "--min-len %d is more than --max-len %d", g->min_out,
                               g->max_out);
    return -1;
}

int cmd_generate(int argc, char **argv) {
    const char *weights = NULL;
    int fmt = FORMAT_TEXT, max_out = 0, min_out = 0, batch = 1;
    bool no_cache = false, teacher = false;
    int beam = 0, top_k = 0, samples = 1, threads = 0;
    double temperature = 1.0, top_p = 1.0;
    uint64_t seed = 1;
    cli_opt opts[] = {
        {"--weights", "FILE", CLI_OPT_STR, &weights,
         .help =
             "attn-seq2seq-weights-v1 JSON or safetensors (attn train --task rewrite); required"},
        {"--no-cache", NULL, CLI_OPT_FLAG, &no_cache,
         .help = "recompute the decoder over the prefix at every step"},
        {"--format", "F", CLI_OPT_CHOICE, &fmt, .choices = "text|json", .help = "text or json"},
        {"--max-len", "N", CLI_OPT_INT, &max_out, 1, ATTN_S2S_MAX_TGT, .def = "max_tgt_len - 1",
         .help = "at most N output words (at most the model's\nmax_tgt_len - 1)"},
        {"--min-len", "N", CLI_OPT_INT, &min_out, 0, ATTN_S2S_MAX_TGT,
         .help = "greedy: at least N output words ([EOS] out of the\nargmax at the first N "
                 "steps; at most --max-len)"},
        {"--batch", "B", CLI_OPT_INT, &batch, 1, GEN_MAX_BATCH,
         .help = "greedy with the KV cache: decode B sources together\n(one thread)"},
        {"--beam", "K", CLI_OPT_INT, &beam, 1, ATTN_S2S_MAX_BEAM, .def = "",
         .help = "beam search of width K (recomputing decoder) instead of\ngreedy decoding"},
        {"--temperature", "T", CLI_OPT_REAL, &temperature,
         .help = "sample from softmax(logits / T) instead of the argmax"},
        {"--top-k", "K", CLI_OPT_INT, &top_k, 1, 1 << 20, .def = "all",
         .help = "sample among the K most probable tokens"},
        {"--top-p", "P", CLI_OPT_REAL, &top_p,
         .help =
             "sample among the fewest most probable tokens whose\nprobability reaches P (<= 1)"},
        {"--seed", "S", CLI_OPT_U64, &seed,
         .help = "seed of the sampling generator (splitmix64), per source"},
        {"--samples", "N", CLI_OPT_INT, &samples, 1, 100000,
         .help = "sampling: N draws per source, seeds S, S+1, .., S+N-1"},
        {"--teacher", NULL, CLI_OPT_FLAG, &teacher,
         .help = "inputs are 'source<TAB>target': print the teacher-forced\nlogits (json)"},
        CLI_THREADS_OPT(&threads),
    };
    cli_spec spec =
        CLI_SPEC("generate",
                 "--weights FILE [--no-cache] [--format text|json] [--max-len N]\n"
                 "[--min-len N] [--batch B]\n"
                 "[--beam K | --temperature T --top-k K --top-p P --seed S --samples N |\n"
                 "--teacher] [--threads N]\n"
                 "[--] [SOURCE...]",
                 about, "SOURCE", notes, opts);
    char **sources = NULL;
    int n_sources = 0;
    int rc = cli_parse_operands(&spec, argc, argv, &sources, &n_sources);
    if (rc < 0 && !weights) rc = cli_usage_error("generate", "--weights FILE is required");
    const bool sample = cli_given(&spec, "--temperature") || cli_given(&spec, "--top-k") ||
                        cli_given(&spec, "--top-p") || cli_given(&spec, "--seed") ||
                        cli_given(&spec, "--samples");
    gen_ctx ctx = {NULL,    !no_cache, fmt,
                   max_out, min_out,   teacher,
                   beam,    sample,    {temperature, top_k, top_p, seed},
                   samples}; /* the models once loaded */
    if (rc < 0) rc = check_choice(&spec, &ctx, batch);
    attn_seq2seq *m = NULL;
    attn_error err;
    if (rc < 0 && attn_seq2seq_load_json(weights, &m, &err) != ATTN_OK)
        rc = cli_fail("generate", &err);
    /* sources on every thread, each decoded as one thread decodes it: the same output for every
     * N; the caller's thread uses the model, the others a replica each, kept for the run */
    attn_pool *pool = NULL;
    attn_seq2seq **models = NULL;
    if (rc < 0 && batch > 1) threads = 1;
    if (rc < 0) rc = cli_threads_start("generate", &threads, &pool);
    if (rc < 0) rc = cli_s2s_thread_models("generate", m, threads, &models);
    if (rc < 0) {
        ctx.models = models;
        rc = generate_run(&ctx, batch, sources, n_sources, pool);
    }
    cli_s2s_thread_models_free(models, threads);
    attn_pool_free(pool);
    attn_seq2seq_free(m);
    free(sources);
    return rc;
}
