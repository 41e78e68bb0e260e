#!/usr/bin/env node
// The onnxruntime half of benchmarks/runtime: runs a reference model and goopt's optimized one in
// onnxruntime (CPU, graph optimization level "all" unless --level says otherwise) on the same
// random inputs, at each thread count, compares their outputs and times them interleaved.
//
//   node time_models.js REFERENCE.onnx OTHER.onnx [--threads 1,2] [--repeat 30] [--warmup 3]
//                       [--seed N] [--level L] [--control]
//
// Prints one JSON object: {"level", "runs": [{"threads", "max_rel_diff", "outputs": [{"name",
// "shape", "max_rel_diff"}], "reference_ms": [...], "other_ms": [...]}]}, times in round order
// (round r ran both, reference first in even rounds), max_rel_diff = max |a - b| / max |b| with b
// the reference's output (null with an "error" where the outputs' names or shapes differ). Inputs:
// floats uniform in [-1, 1], integers 0 or 1, drawn from --seed (run_model.js). Each session uses
// intra-op threads = the thread count, one inter-op thread (sequential execution) and no spinning
// (run_model.js's timingOptions: an idle session's spinning workers would slow the next one), and
// glibc keeps the memory it frees (run_model.js's keepFreedMemory: no page first-touched per run).
// A garbage collection before each round frees the last rounds' outputs (run_model.js's collectAndSettle).
// --control opens REFERENCE a second time (a session of its own) and times it in the same rounds
// ("control_ms"): the reference against itself, so that a row shows the noise of its own rounds.
'use strict';

const { loadOrt, makeFeeds, runModel, keepFreedMemory, timingOptions, timeRunsInOrder, relativeDifference, fail } = require('./run_model.js');

function parseArgs(argv) {
    const a = { models: [], threads: [1], repeat: 30, warmup: 3, seed: 1, level: 'all' };
    for (let i = 0; i < argv.length; ++i) {
        const flag = argv[i];
        const value = () => {
            if (i + 1 >= argv.length) fail(`${flag} needs a value`);
            return argv[++i];
        };
        if (flag === '--threads') a.threads = value().split(',').map(Number);
        else if (flag === '--repeat') a.repeat = Number(value());
        else if (flag === '--warmup') a.warmup = Number(value());
        else if (flag === '--seed') a.seed = Number(value());
        else if (flag === '--level') a.level = value();
        else if (flag === '--control') a.control = true;
        else if (flag.startsWith('--')) fail(`unknown flag ${flag}`);
        else a.models.push(flag);
    }
    if (a.models.length !== 2) fail('expected two models: node time_models.js REFERENCE.onnx OTHER.onnx');
    if (!a.threads.every((t) => Number.isInteger(t) && t >= 1)) fail('--threads needs counts >= 1, comma-separated');
    if (!Number.isInteger(a.repeat) || a.repeat < 1) fail('--repeat needs a count >= 1');
    if (!Number.isInteger(a.warmup) || a.warmup < 0) fail('--warmup needs a count >= 0');
    if (!Number.isInteger(a.seed)) fail('--seed needs an integer');
    return a;
}

/// The outputs of `other` against those of `ref`, output by output.
function compare(ref, other) {
    if (ref.length !== other.length) return { error: `${ref.length} outputs against ${other.length}` };
    const outputs = [];
    let worst = 0;
    for (let k = 0; k < ref.length; ++k) {
        const [b, a] = [ref[k], other[k]];
        if (a.name !== b.name || a.shape.join(',') !== b.shape.join(','))
            return { error: `output ${k}: '${b.name}' [${b.shape}] against '${a.name}' [${a.shape}]` };
        const { rel } = relativeDifference(a.data, b.data);
        outputs.push({ name: b.name, shape: b.shape, max_rel_diff: Number.isFinite(rel) ? rel : null });
        worst = Number.isFinite(rel) && worst !== null ? Math.max(worst, rel) : null;
    }
    return { outputs, max_rel_diff: worst };
}

async function main() {
    keepFreedMemory();
    const args = parseArgs(process.argv.slice(2));
    const ort = loadOrt();
    const [refModel, otherModel] = args.models;
    const runs = [];
    for (const threads of args.threads) {
        const options = timingOptions(threads);
        const ref = await runModel(ort, refModel, (s) => makeFeeds(ort, s, {}, [], args.seed), args.level, options);
        const other = await runModel(ort, otherModel, (s) => makeFeeds(ort, s, ref.inputs, [], null), args.level,
                                     options);
        const row = { threads, ...compare(ref.outputs, other.outputs) };
        if (!row.error) {
            const timed = [ref, other];
            if (args.control)
                timed.push(await runModel(ort, refModel, (s) => makeFeeds(ort, s, ref.inputs, [], null), args.level,
                                          options));
            await timeRunsInOrder(timed, args.warmup);
            [row.reference_ms, row.other_ms, row.control_ms] = await timeRunsInOrder(timed, args.repeat);
        }
        runs.push(row);
    }
    process.stdout.write(JSON.stringify({ level: args.level, runs }) + '\n');
}

main().catch((e) => fail(e.message));
