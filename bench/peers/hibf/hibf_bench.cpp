// Side-by-side harness: seqan/hibf (Hierarchical Interleaved Bloom Filter) on the same sets and
// the same u64 keys that bloomslice can be given as bloomslice::Prehashed(u64).
// Key -> u64: XXH3-64 of the key's bytes, seed 0 (xxhash.h, header only).
// Prints one JSON line. See README.md beside this file.
#include <algorithm>
#include <array>
#include <bit>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <numeric>
#include <random>
#include <sstream>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <cereal/archives/binary.hpp>

#include <hibf/config.hpp>
#include <hibf/hierarchical_interleaved_bloom_filter.hpp>
#include <hibf/version.hpp>

#define XXH_INLINE_ALL
#include <xxhash.h>

#ifndef HIBF_COMMIT
#    define HIBF_COMMIT "unknown"
#endif

namespace
{
using clk = std::chrono::steady_clock;
using hibf_t = seqan::hibf::hierarchical_interleaved_bloom_filter;

uint64_t key_hash(std::string_view s)
{
    return XXH3_64bits(s.data(), s.size());
}

std::string json_str(std::string const & s)
{
    std::string o = "\"";
    for (unsigned char c : s)
    {
        if (c == '"' || c == '\\')
            o += '\\', o += static_cast<char>(c);
        else if (c < 0x20)
        {
            char b[8];
            std::snprintf(b, sizeof b, "\\u%04x", c);
            o += b;
        }
        else
            o += static_cast<char>(c);
    }
    return o + "\"";
}

std::string cpu_model()
{
    std::ifstream f{"/proc/cpuinfo"};
    for (std::string l; std::getline(f, l);)
        if (l.starts_with("model name"))
            return l.substr(l.find(':') + 2);
    return "unknown";
}

[[noreturn]] void usage()
{
    std::cerr << "usage: hibf_bench (--dir DIR [--suffix .list] | --tsv FILE) [--k 7] [--fpr 0.01]\n"
                 "                  [--dump-keys FILE] [--dump-absent FILE] [--seed 42] [--passes 3]\n";
    std::exit(2);
}

// Walks the HIBF levels directly: for each IBF, the bins' bit vector of the key; descend only into
// merged bins that hit; a user bin split over adjacent technical bins is reported once.
struct walker
{
    hibf_t const & h;
    std::vector<seqan::hibf::interleaved_bloom_filter::containment_agent_type> agents;
    std::vector<uint64_t> out;

    explicit walker(hibf_t const & hibf) : h{hibf}
    {
        for (auto const & ibf : h.ibf_vector)
            agents.push_back(ibf.containment_agent());
    }

    void visit(size_t const idx, uint64_t const key)
    {
        auto const & bv = agents[idx].bulk_contains(key);
        uint64_t const * const w = bv.data();
        size_t const bins = h.ibf_vector[idx].bin_count();
        auto const & to_user = h.ibf_bin_to_user_bin_id[idx];
        uint64_t last = seqan::hibf::bin_kind::merged;
        for (size_t i = 0, words = (bins + 63) / 64; i < words; ++i)
        {
            uint64_t m = w[i];
            if (i + 1 == words && bins % 64)
                m &= (uint64_t{1} << (bins % 64)) - 1;
            while (m)
            {
                size_t const bin = i * 64 + std::countr_zero(m);
                m &= m - 1;
                uint64_t const ub = to_user[bin];
                if (ub == seqan::hibf::bin_kind::merged)
                    visit(h.next_ibf_id[idx][bin], key);
                else if (ub != seqan::hibf::bin_kind::deleted && ub != last)
                    out.push_back(ub), last = ub;
            }
        }
    }

    std::vector<uint64_t> const & query(uint64_t const key)
    {
        out.clear();
        visit(0, key);
        return out;
    }
};

size_t depth(hibf_t const & h, size_t idx)
{
    size_t d = 0;
    for (size_t b = 0; b < h.ibf_bin_to_user_bin_id[idx].size(); ++b)
        if (h.ibf_bin_to_user_bin_id[idx][b] == seqan::hibf::bin_kind::merged)
            d = std::max(d, depth(h, h.next_ibf_id[idx][b]));
    return d + 1;
}
} // namespace

int main(int argc, char ** argv)
{
    std::string dir, tsv, dump, dump_absent, suffix;
    size_t k = 7;
    double fpr = 0.01;
    uint64_t seed = 42;
    size_t passes = 3;
    std::string cmd;
    for (int i = 0; i < argc; ++i)
        cmd += (i ? " " : "") + std::string{argv[i]};
    for (int i = 1; i < argc; ++i)
    {
        std::string a = argv[i];
        if (i + 1 >= argc)
            usage();
        std::string v = argv[++i];
        if (a == "--dir")
            dir = v;
        else if (a == "--tsv")
            tsv = v;
        else if (a == "--suffix")
            suffix = v;
        else if (a == "--k")
            k = std::stoul(v);
        else if (a == "--fpr")
            fpr = std::stod(v);
        else if (a == "--dump-keys")
            dump = v;
        else if (a == "--dump-absent")
            dump_absent = v;
        else if (a == "--passes")
            passes = std::max<size_t>(1, std::stoul(v));
        else if (a == "--seed")
            seed = std::stoull(v);
        else
            usage();
    }
    if (dir.empty() == tsv.empty())
        usage();

    // ---- read the sets (distinct keys per set) ----
    std::vector<std::string> names;
    std::vector<std::vector<std::string>> sets;
    if (!dir.empty())
    {
        std::vector<std::filesystem::path> files;
        for (auto const & e : std::filesystem::directory_iterator{dir})
            if (e.is_regular_file() && (suffix.empty() || e.path().string().ends_with(suffix)))
                files.push_back(e.path());
        std::ranges::sort(files);
        for (auto const & p : files)
        {
            std::ifstream f{p};
            std::unordered_set<std::string> s;
            for (std::string l; std::getline(f, l);)
                if (!l.empty())
                    s.insert(l);
            names.push_back(p.filename().string());
            sets.emplace_back(s.begin(), s.end());
        }
    }
    else
    {
        std::ifstream f{tsv};
        std::map<std::string, std::unordered_set<std::string>> m;
        for (std::string l; std::getline(f, l);)
            if (auto t = l.find('\t'); t != std::string::npos && t + 1 < l.size())
                m[l.substr(0, t)].insert(l.substr(t + 1));
        for (auto & [n, s] : m)
            names.push_back(n), sets.emplace_back(s.begin(), s.end());
    }
    size_t const n_sets = sets.size();
    if (n_sets == 0)
    {
        std::cerr << "no sets read\n";
        return 1;
    }

    // ---- keys -> u64; truth at the u64 level (what both systems see) ----
    std::vector<std::vector<uint64_t>> hsets(n_sets);
    std::unordered_map<uint64_t, std::vector<uint32_t>> truth;
    std::unordered_set<std::string> all_keys;
    size_t total = 0;
    for (size_t s = 0; s < n_sets; ++s)
    {
        for (auto const & key : sets[s])
            hsets[s].push_back(key_hash(key)), all_keys.insert(key);
        std::ranges::sort(hsets[s]);
        auto [b, e] = std::ranges::unique(hsets[s]);
        hsets[s].erase(b, e);
        for (uint64_t x : hsets[s])
            truth[x].push_back(static_cast<uint32_t>(s));
        total += hsets[s].size();
    }
    if (!dump.empty())
    {
        std::ofstream o{dump};
        char b[24];
        for (size_t s = 0; s < n_sets; ++s)
            for (uint64_t x : hsets[s])
                std::snprintf(b, sizeof b, "%016llx", static_cast<unsigned long long>(x)), o << names[s] << '\t' << b << '\n';
    }
    std::vector<uint64_t> present;
    present.reserve(truth.size());
    for (auto const & [x, _] : truth)
        present.push_back(x);
    std::ranges::sort(present);
    // Absent keys: every distinct key with a suffix; kept only if neither the string nor its u64 is an input key.
    std::string const absent_suffix = "\x1f#absent";
    std::vector<uint64_t> absent;
    for (auto const & key : all_keys)
    {
        std::string a = key + absent_suffix;
        uint64_t x = key_hash(a);
        if (!all_keys.contains(a) && !truth.contains(x))
            absent.push_back(x);
    }
    std::ranges::sort(absent);
    absent.erase(std::ranges::unique(absent).begin(), absent.end());
    if (!dump_absent.empty())
    {
        std::ofstream o{dump_absent};
        char b[24];
        for (uint64_t x : absent)
            std::snprintf(b, sizeof b, "%016llx", static_cast<unsigned long long>(x)), o << b << '\n';
    }
    std::mt19937_64 rng{seed};
    std::ranges::shuffle(present, rng);
    std::ranges::shuffle(absent, rng);

    // ---- build, one thread ----
    seqan::hibf::config cfg{.input_fn =
                                [&](size_t const ub, seqan::hibf::insert_iterator && it)
                            {
                                for (uint64_t x : hsets[ub])
                                    it = x;
                            },
                            .number_of_user_bins = n_sets,
                            .number_of_hash_functions = k,
                            .maximum_fpr = fpr,
                            .threads = 1};
    try
    {
        cfg.validate_and_set_defaults();
    }
    catch (std::exception const & e)
    {
        std::cerr << "hibf rejects this configuration: " << e.what() << '\n';
        return 2;
    }
    auto t0 = clk::now();
    hibf_t hibf{cfg};
    double const build_s = std::chrono::duration<double>(clk::now() - t0).count();

    size_t bits = 0, tech_bins = 0;
    for (auto const & ibf : hibf.ibf_vector)
        bits += ibf.bit_size(), tech_bins += ibf.bin_count();
    std::ostringstream ser;
    {
        cereal::BinaryOutputArchive ar{ser};
        ar(hibf);
    }
    size_t const file_bytes = ser.str().size();

    // ---- (b) must answer exactly as (a), for every key; (c) false sets against the truth ----
    auto agent = hibf.membership_agent();
    walker walk{hibf};
    size_t mismatches = 0, false_neg = 0, false_present = 0, false_absent = 0, max_false_absent = 0, absent_ge10 = 0;
    std::vector<size_t> fp_per_set(n_sets, 0);
    std::vector<uint64_t> ra, rb;
    auto check = [&](uint64_t x, bool is_present)
    {
        std::array<uint64_t, 1> v{x};
        auto const & a = agent.membership_for(v, 1u);
        ra.assign(a.begin(), a.end());
        rb = walk.query(x);
        std::ranges::sort(ra);
        std::ranges::sort(rb);
        if (ra != rb)
            ++mismatches;
        std::vector<uint32_t> const * t = nullptr;
        if (is_present)
            t = &truth.at(x);
        size_t nf = 0, ti = 0;
        for (uint64_t s : ra)
        {
            while (t && ti < t->size() && (*t)[ti] < s)
                ++ti;
            if (t && ti < t->size() && (*t)[ti] == s)
                continue;
            ++fp_per_set[s], ++nf;
        }
        if (t)
            for (uint32_t s : *t)
                false_neg += !std::ranges::binary_search(ra, uint64_t{s});
        (is_present ? false_present : false_absent) += nf;
        if (!is_present)
            max_false_absent = std::max(max_false_absent, nf), absent_ge10 += nf >= 10;
    };
    for (uint64_t x : present)
        check(x, true);
    for (uint64_t x : absent)
        check(x, false);
    size_t const n_queries = present.size() + absent.size();
    double fp_max = 0, fp_sum = 0;
    for (size_t s = 0; s < n_sets; ++s)
    {
        double const negatives = static_cast<double>(n_queries - hsets[s].size());
        double const r = fp_per_set[s] / negatives;
        fp_max = std::max(fp_max, r), fp_sum += r;
    }

    // ---- timing: one pass each, after the checking pass above warmed everything ----
    uint64_t sink = 0;
    // Each figure: the fastest of `passes` passes over the keys.
    auto time_api = [&](std::vector<uint64_t> const & keys)
    {
        double best = 1e300;
        for (size_t p = 0; p < passes; ++p)
        {
            auto t = clk::now();
            for (uint64_t x : keys)
            {
                std::array<uint64_t, 1> v{x};
                sink += agent.membership_for(v, 1u).size();
            }
            best = std::min(best, std::chrono::duration<double, std::nano>(clk::now() - t).count() / keys.size());
        }
        return best;
    };
    auto time_walk = [&](std::vector<uint64_t> const & keys)
    {
        double best = 1e300;
        for (size_t p = 0; p < passes; ++p)
        {
            auto t = clk::now();
            for (uint64_t x : keys)
                sink += walk.query(x).size();
            best = std::min(best, std::chrono::duration<double, std::nano>(clk::now() - t).count() / keys.size());
        }
        return best;
    };
    double const api_p = time_api(present), api_a = time_api(absent);
    double const walk_p = time_walk(present), walk_a = time_walk(absent);
    double const all_w = static_cast<double>(present.size()) / n_queries;

    std::ostringstream o;
    o.precision(6);
    o << "{\"command\":" << json_str(cmd) << ",\"cpu\":" << json_str(cpu_model())
      << ",\"hibf_commit\":\"" HIBF_COMMIT "\",\"hibf_version\":\"" << seqan::hibf::hibf_version_cstring << "\""
      << ",\"key_hash\":\"xxh3_64(seed 0)\",\"k\":" << k << ",\"max_fpr\":" << fpr << ",\"sets\":" << n_sets
      << ",\"keys_total\":" << total << ",\"distinct_keys\":" << present.size()
      << ",\"distinct_strings\":" << all_keys.size() << ",\"absent_keys\":" << absent.size()
      << ",\"tmax\":" << cfg.tmax << ",\"relaxed_fpr\":" << cfg.relaxed_fpr << ",\"build_s\":" << build_s << ",\"ibfs\":" << hibf.ibf_vector.size() << ",\"levels\":" << depth(hibf, 0)
      << ",\"technical_bins\":" << tech_bins << ",\"ibf_bits\":" << bits << ",\"ibf_bytes\":" << bits / 8
      << ",\"file_bytes\":" << file_bytes << ",\"walk_agrees\":" << (mismatches == 0 ? "true" : "false")
      << ",\"mismatches\":" << mismatches << ",\"false_negatives\":" << false_neg
      << ",\"false_sets_per_absent_key\":" << static_cast<double>(false_absent) / absent.size()
      << ",\"max_false_sets_absent_key\":" << max_false_absent
      << ",\"absent_keys_ge10_false_sets\":" << absent_ge10 << ",\"false_sets_per_present_key\":" << static_cast<double>(false_present) / present.size()
      << ",\"per_set_fp_max\":" << fp_max << ",\"per_set_fp_mean\":" << fp_sum / n_sets
      << ",\"membership_for_ns\":{\"present\":" << api_p << ",\"absent\":" << api_a
      << ",\"all\":" << all_w * api_p + (1 - all_w) * api_a << "}"
      << ",\"passes\":" << passes << ",\"walk_ns\":{\"present\":" << walk_p << ",\"absent\":" << walk_a
      << ",\"all\":" << all_w * walk_p + (1 - all_w) * walk_a << "}"
      << ",\"sink\":" << sink % 10 << "}";
    std::cout << o.str() << std::endl;
    return mismatches == 0 && false_neg == 0 ? 0 : 1;
}
