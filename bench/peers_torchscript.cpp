// peers_torchscript.cpp -- TorchScript from C++ (Debian's libtorch-dev) for bench/peers.sh: the
// jit-saved modules of tools/bench_peers.py and tools/bench_peers_seq2seq.py (export), timed at
// batch 1 on one thread (at::set_num_threads(1); bench/peers.sh sets OPENBLAS_NUM_THREADS=1 and
// pins OpenBLAS and ATen as tools/blas_core.py does), no Python involved.
//
//   peers_torchscript classifier MODEL.pt IDS LOGITS REPS
//     each sentence of IDS alone (ids int64 [1, T], lengths int64 [1]); the last pass's logits
//     to LOGITS (float32, sentence order)
//   peers_torchscript seq2seq PREFIX IDS OUT REPS BOS EOS MAX_OUT
//     greedy decoding over PREFIX.enc.pt / PREFIX.step.pt as tools/bench_peers_seq2seq.py's
//     torchscript mode; the last pass's words to OUT.tok, its step logits to OUT.f32
// REPS timed passes after one untimed one; prints the line bench/peers_table.py reads:
//   peer name=ts_cpp sentences=1000 reps=5 median_s=0.2 cpu_median_s=0.2
//   peer name=ts_cpp sources=100 tokens=458 reps=2 median_s=0.1 cpu_median_s=0.1
// (CPU: this thread's CPU time). Exit codes: 0 ok, 1 runtime error, 2 usage.
#include <ATen/Parallel.h>
#include <torch/script.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

namespace {

double now_s(clockid_t clock) {
    timespec ts;
    clock_gettime(clock, &ts);
    return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::vector<std::vector<int64_t>> read_ids(const std::string &path) {
    std::ifstream f(path);
    if (!f) throw std::runtime_error(path + ": cannot read");
    std::vector<std::vector<int64_t>> out;
    std::string line;
    for (int number = 1; std::getline(f, line); number++) {
        std::istringstream in(line);
        std::vector<int64_t> ids;
        std::string w;
        while (in >> w) {
            if (w.find_first_not_of("0123456789") != std::string::npos)
                throw std::runtime_error(path + ":" + std::to_string(number) +
                                         ": expected token ids");
            ids.push_back(std::stoll(w));
        }
        if (!ids.empty()) out.push_back(ids);
    }
    if (out.empty()) throw std::runtime_error(path + ": no sentences");
    return out;
}

torch::Tensor row(const std::vector<int64_t> &v) {
    return torch::tensor(v, torch::kLong).view({1, int64_t(v.size())});
}

void write_file(const std::string &path, const std::string &bytes) {
    std::ofstream f(path + ".tmp", std::ios::binary);
    f.write(bytes.data(), std::streamsize(bytes.size()));
    f.close();
    if (!f || std::rename((path + ".tmp").c_str(), path.c_str()) != 0)
        throw std::runtime_error(path + ": cannot write");
}

std::string floats_of(const torch::Tensor &t) {
    torch::Tensor c = t.contiguous().to(torch::kFloat);
    return std::string(reinterpret_cast<const char *>(c.data_ptr<float>()),
                       size_t(c.numel()) * sizeof(float));
}

int classifier(char **argv, int reps) {
    torch::jit::Module m = torch::jit::load(argv[2]);
    m.eval();
    auto sentences = read_ids(argv[3]);
    std::vector<std::vector<torch::jit::IValue>> inputs;
    for (auto &s : sentences)
        inputs.push_back({row(s), torch::tensor({int64_t(s.size())}, torch::kLong)});
    std::vector<double> walls, cpus;
    std::string logits;
    for (int r = 0; r < reps + 1; r++) {
        double t0 = now_s(CLOCK_MONOTONIC), c0 = now_s(CLOCK_THREAD_CPUTIME_ID);
        std::vector<torch::Tensor> outs;
        outs.reserve(inputs.size());
        for (auto &in : inputs) outs.push_back(m.forward(in).toTensor());
        if (r > 0) {
            walls.push_back(now_s(CLOCK_MONOTONIC) - t0);
            cpus.push_back(now_s(CLOCK_THREAD_CPUTIME_ID) - c0);
        }
        if (r == reps) {
            torch::Tensor all = torch::cat(outs);
            if (!torch::isfinite(all).all().item<bool>())
                throw std::runtime_error("non-finite logits");
            logits = floats_of(all);
        }
    }
    write_file(argv[4], logits);
    std::printf("peer name=ts_cpp sentences=%zu reps=%d median_s=%.6f cpu_median_s=%.6f\n",
                sentences.size(), reps, median(walls), median(cpus));
    return 0;
}

torch::Tensor causal_mask(int64_t T) {
    return torch::full({T, T}, -std::numeric_limits<float>::infinity()).triu(1);
}

int seq2seq(char **argv, int reps, int64_t bos, int64_t eos, int max_out) {
    std::string prefix = argv[2];
    torch::jit::Module enc = torch::jit::load(prefix + ".enc.pt"),
                       step = torch::jit::load(prefix + ".step.pt");
    enc.eval();
    step.eval();
    // self, memory, prefix, mask (the transformer) or self, enc, keys, state, token (the RNNs)
    const bool transformer =
        step.get_method("forward").function().getSchema().arguments().size() == 4;
    auto sources = read_ids(argv[3]);
    std::vector<double> walls, cpus;
    std::string words_text, logits;
    long tokens = 0;
    for (int r = 0; r < reps + 1; r++) {
        double t0 = now_s(CLOCK_MONOTONIC), c0 = now_s(CLOCK_THREAD_CPUTIME_ID);
        std::vector<std::vector<int64_t>> words(sources.size());
        std::vector<torch::Tensor> rows;
        for (size_t i = 0; i < sources.size(); i++) {
            torch::jit::IValue memory = enc.forward({row(sources[i])});
            std::vector<int64_t> prefix_ids{bos};
            torch::jit::IValue state;
            if (!transformer) state = memory.toTuple()->elements()[2];
            while (int(prefix_ids.size()) - 1 < max_out) {
                torch::Tensor l;
                if (transformer) {
                    l = step.forward(
                                {memory, row(prefix_ids), causal_mask(int64_t(prefix_ids.size()))})
                            .toTensor();
                } else {
                    auto &e = memory.toTuple()->elements();
                    auto out = step.forward({e[0], e[1], state,
                                             torch::tensor({prefix_ids.back()}, torch::kLong)})
                                   .toTuple();
                    l = out->elements()[0].toTensor();
                    state = out->elements()[1];
                }
                rows.push_back(l[0]);
                int64_t next = l[0].argmax().item<int64_t>();
                if (next == eos) break;
                prefix_ids.push_back(next);
            }
            words[i].assign(prefix_ids.begin() + 1, prefix_ids.end());
        }
        if (r > 0) {
            walls.push_back(now_s(CLOCK_MONOTONIC) - t0);
            cpus.push_back(now_s(CLOCK_THREAD_CPUTIME_ID) - c0);
        }
        if (r == reps) {
            tokens = long(rows.size());
            torch::Tensor all = torch::stack(rows);
            if (!torch::isfinite(all).all().item<bool>())
                throw std::runtime_error("non-finite logits");
            logits = floats_of(all);
            std::ostringstream t;
            for (auto &w : words) {
                for (size_t k = 0; k < w.size(); k++) t << (k ? " " : "") << w[k];
                t << "\n";
            }
            words_text = t.str();
        }
    }
    write_file(std::string(argv[4]) + ".tok", words_text);
    write_file(std::string(argv[4]) + ".f32", logits);
    std::printf("peer name=ts_cpp sources=%zu tokens=%ld reps=%d median_s=%.6f cpu_median_s=%.6f\n",
                sources.size(), tokens, reps, median(walls), median(cpus));
    return 0;
}

int positive(const char *s, int *out) {
    char *end;
    long v = std::strtol(s, &end, 10);
    if (end == s || *end || v < 0 || v > 1000000) return 0;
    *out = int(v);
    return 1;
}

} // namespace

int main(int argc, char **argv) {
    const char *usage = "usage: peers_torchscript classifier MODEL.pt IDS LOGITS REPS\n"
                        "       peers_torchscript seq2seq PREFIX IDS OUT REPS BOS EOS MAX_OUT\n";
    std::string mode = argc > 1 ? argv[1] : "";
    int reps = 0, bos = 0, eos = 0, max_out = 0;
    bool ok = (mode == "classifier" && argc == 6) || (mode == "seq2seq" && argc == 9);
    ok = ok && positive(argv[5], &reps) && reps >= 1;
    if (ok && mode == "seq2seq")
        ok = positive(argv[6], &bos) && positive(argv[7], &eos) && positive(argv[8], &max_out) &&
             max_out >= 1;
    if (!ok) {
        std::fputs(usage, stderr);
        return 2;
    }
    at::set_num_threads(1);
    at::set_num_interop_threads(1);
    torch::NoGradGuard no_grad;
    try {
        return mode == "classifier" ? classifier(argv, reps)
                                    : seq2seq(argv, reps, bos, eos, max_out);
    } catch (const std::exception &e) {
        std::fprintf(stderr, "peers_torchscript: %s\n", e.what());
        return 1;
    }
}
