#!/usr/bin/env node
// Runs an ONNX model in onnxruntime (CPU) on given inputs and writes its outputs: the reference
// runtime of goopt's ONNX round-trip tests. Install once with ./bootstrap.sh ort.
//
//   node run_model.js MODEL.onnx [--inputs IN.json] [--input NAME=FILE.f32]... [--random SEED]
//                     [--save-inputs FILE.json] [--level disabled|basic|extended|all] [--out OUT.json]
//                     [--repeat N]
//
// IN.json holds {"<input>": {"shape": [...], "data": [...]}, ...} (the "inputs" of tests/data/onnx/*.json);
// FILE.f32 is raw little-endian float32 in the input's shape from the model. --random SEED fills every
// input not given: floats uniform in [-1, 1], integers 0 or 1 (valid indices for any embedding).
// --save-inputs writes the inputs used, to feed another model the same. OUT.json (default: stdout) is
// {"outputs": [{"name", "type", "shape", "data"}, ...]} in the model's output order. The graph
// optimization level is "all" (constant folding, fusions, layout passes) unless --level says otherwise.
// --repeat N times N more runs and adds "milliseconds": {median, min, max, runs} to OUT.json.
'use strict';

const fs = require('fs');
const path = require('path');

function fail(message) {
    process.stderr.write(`run_model.js: error: ${message}\n`);
    process.exit(1);
}

function loadOrt() {
    try {
        return require('onnxruntime-node');
    } catch (e) {
        fail(`onnxruntime-node is not installed next to ${__filename} (./bootstrap.sh ort): ${e.message.split('\n')[0]}`);
    }
}

/// A seeded generator of uniform numbers in [0, 1) (mulberry32): the same inputs for the same seed.
function uniform(seed) {
    let a = seed >>> 0;
    return () => {
        a = (a + 0x6d2b79f5) >>> 0;
        let t = a;
        t = Math.imul(t ^ (t >>> 15), t | 1);
        t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
        return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
}

const typedArrays = {
    float32: Float32Array,
    float64: Float64Array,
    int64: BigInt64Array,
    int32: Int32Array,
    int8: Int8Array,
    uint8: Uint8Array,
    bool: Uint8Array,
};

function tensorOf(ort, meta, shape, values) {
    const Array = typedArrays[meta.type];
    if (!Array) fail(`input '${meta.name}' has element type ${meta.type}: expected one of ${Object.keys(typedArrays)}`);
    const count = shape.reduce((a, b) => a * b, 1);
    if (values.length !== count) fail(`input '${meta.name}': ${values.length} values for shape [${shape}]`);
    const data = meta.type === 'int64' ? BigInt64Array.from(values, (v) => BigInt(Math.trunc(v))) : Array.from(values);
    return new ort.Tensor(meta.type, data, shape);
}

function staticShape(meta) {
    const shape = meta.shape || [];
    for (const d of shape)
        if (typeof d !== 'number' || d < 0) fail(`input '${meta.name}' has a symbolic dimension: give it in --inputs`);
    return shape;
}

function parseArgs(argv) {
    const a = { model: null, inputs: null, raw: [], seed: null, saveInputs: null, level: 'all', out: null, repeat: 0 };
    for (let i = 0; i < argv.length; ++i) {
        const flag = argv[i];
        const value = () => {
            if (i + 1 >= argv.length) fail(`${flag} needs a value`);
            return argv[++i];
        };
        if (flag === '--inputs') a.inputs = value();
        else if (flag === '--input') a.raw.push(value());
        else if (flag === '--random') a.seed = Number(value());
        else if (flag === '--save-inputs') a.saveInputs = value();
        else if (flag === '--level') a.level = value();
        else if (flag === '--out') a.out = value();
        else if (flag === '--repeat') a.repeat = Number(value());
        else if (flag.startsWith('--')) fail(`unknown flag ${flag}`);
        else if (a.model === null) a.model = flag;
        else fail(`a second model '${flag}'`);
    }
    if (a.model === null) fail('no model given: node run_model.js MODEL.onnx [--inputs IN.json] [--out OUT.json]');
    if (!['disabled', 'basic', 'extended', 'all'].includes(a.level))
        fail(`--level ${a.level}: expected disabled, basic, extended or all`);
    if (a.seed !== null && !Number.isInteger(a.seed)) fail('--random needs an integer seed');
    if (!Number.isInteger(a.repeat) || a.repeat < 0) fail('--repeat needs a count >= 0');
    return a;
}

/// The feeds of `session` from JSON values (name -> {shape?, data}), raw float32 files and a seed,
/// as a map name -> ort.Tensor, and the same as plain JSON.
function makeFeeds(ort, session, given, raw, seed) {
    const feeds = {};
    const json = {};
    const next = seed === null ? null : uniform(seed);
    const metas = session.inputMetadata;
    const byName = Object.fromEntries(metas.map((m) => [m.name, m]));
    for (const name of Object.keys(given)) if (!byName[name]) fail(`--inputs names '${name}', which the model has no input of`);
    const rawFiles = {};
    for (const r of raw) {
        const eq = r.indexOf('=');
        if (eq <= 0) fail(`--input ${r}: expected NAME=FILE.f32`);
        rawFiles[r.slice(0, eq)] = r.slice(eq + 1);
    }
    for (const meta of metas) {
        let shape;
        let values;
        if (given[meta.name]) {
            shape = given[meta.name].shape || staticShape(meta);
            values = given[meta.name].data;
        } else if (rawFiles[meta.name]) {
            if (meta.type !== 'float32') fail(`--input ${meta.name}: raw files are float32, the input is ${meta.type}`);
            shape = staticShape(meta);
            const b = fs.readFileSync(rawFiles[meta.name]);
            values = Array.from(new Float32Array(b.buffer, b.byteOffset, Math.floor(b.length / 4)));
        } else if (next) {
            shape = staticShape(meta);
            const count = shape.reduce((x, y) => x * y, 1);
            const floating = meta.type === 'float32' || meta.type === 'float64';
            values = Array.from({ length: count }, () => (floating ? 2 * next() - 1 : next() < 0.5 ? 0 : 1));
            if (meta.type === 'float32') values = Array.from(Float32Array.from(values));
        } else {
            fail(`no value for input '${meta.name}': give it in --inputs, with --input, or draw it with --random SEED`);
        }
        feeds[meta.name] = tensorOf(ort, meta, shape, values);
        json[meta.name] = { shape, data: values };
    }
    return { feeds, json };
}

/// Makes the timing scripts run with glibc keeping the memory it frees: unless the caller set
/// MALLOC_TRIM_THRESHOLD_ already, runs this script again as a child with MALLOC_MMAP_THRESHOLD_ (32
/// MiB, glibc's largest) and MALLOC_TRIM_THRESHOLD_ (1 GiB) set, and exits with its status. By
/// default a buffer over 128 KiB (a model's output, each run) is a fresh mapping, released when
/// freed, so every run touched its pages again; on this machine's VM first touches cost up to 12 ms
/// per run, hit 10-60 % of the runs of a 3 MB ReLU (0.3 ms) and made a table's single ops up to 20
/// times slower than the same op inside a model (2026-12-03, docs/cost.md). The child also gets
/// --expose-gc, for collectGarbage. Call it first in main().
function keepFreedMemory() {
    if (process.env.MALLOC_TRIM_THRESHOLD_ !== undefined) return;  // (the child, or a caller's own setting)
    const { spawnSync } = require('child_process');
    const env = { ...process.env, MALLOC_MMAP_THRESHOLD_: String(32 << 20), MALLOC_TRIM_THRESHOLD_: String(1 << 30) };
    const child = spawnSync(process.execPath, ['--expose-gc', ...process.execArgv, ...process.argv.slice(1)], {
        stdio: 'inherit',
        env,
    });
    if (child.error) fail(`cannot run ${process.argv[1]} again with glibc keeping freed memory: ${child.error.message}`);
    process.exit(child.status === null ? 1 : child.status);
}

/// Session options for timing with `threads` intra-op threads: one inter-op thread, sequential
/// execution, and the thread pools' spinning off. Timing interleaves several sessions, each with a
/// pool of its own; a pool whose workers spin on after their run busy-waits on a core while the next
/// session runs, which on a 2-core machine made a small model at 2 threads run up to 2.6 times
/// slower than at 1 and its own second session differ from it by up to 45 % (2026-12-03,
/// docs/runtime.md). At 1 thread there is no worker, so nothing changes there.
function timingOptions(threads) {
    return {
        intraOpNumThreads: threads,
        interOpNumThreads: 1,
        executionMode: 'sequential',
        extra: { session: { intra_op: { allow_spinning: '0' }, inter_op: { allow_spinning: '0' } } },
    };
}

/// Runs `model` once on the feeds `feedsOf(session)` gives; `sessionOptions` (thread counts) are
/// added to the graph optimization level.
async function runModel(ort, model, feedsOf, level, sessionOptions = {}) {
    let session;
    try {
        session = await ort.InferenceSession.create(model, { ...sessionOptions, graphOptimizationLevel: level });
    } catch (e) {
        fail(`${model}: onnxruntime cannot load it: ${e.message}`);
    }
    const { feeds, json } = feedsOf(session);
    const results = await session.run(feeds);
    const outputs = session.outputNames.map((name) => {
        const t = results[name];
        const data = Array.from(t.data, (v) => (typeof v === 'bigint' ? Number(v) : v));
        return { name, type: t.type, shape: Array.from(t.dims), data };
    });
    return { outputs, inputs: json, session, feeds };
}

/// Milliseconds of one session.run of each of `runs` ({session, feeds}), `repeat` rounds with the
/// runs interleaved (so that a machine's load falls on all of them alike; every other round runs
/// them in reverse order, so that none always runs first): per run, its times in round order.
async function timeRunsInOrder(runs, repeat) {
    const times = runs.map(() => []);
    for (let r = 0; r < repeat; ++r) {
        const order = runs.map((_, i) => (r % 2 === 0 ? i : runs.length - 1 - i));
        await collectAndSettle(runs[order[order.length - 1]]);
        for (const k of order) {
            const t0 = process.hrtime.bigint();
            await runs[k].session.run(runs[k].feeds);
            times[k].push(Number(process.hrtime.bigint() - t0) / 1e6);
        }
    }
    return times;
}

/// Frees the outputs of the runs so far (a full V8 garbage collection; the timing scripts run with
/// --expose-gc, see keepFreedMemory), between timed runs. A run's outputs are new buffers that only
/// a collection frees, and V8 collects on its own only after about 64 MB of them: until then every
/// run's output was memory the process had never touched, and first touches cost about 12 us a page
/// here (a ReLU of 64 K floats took 0.8 ms in a process's first 120-260 runs, then 37 us; a table
/// measured by a short process priced every small op at about 0.8 ms; 2026-12-03, docs/cost.md).
/// Collected every round, the next round's outputs reuse the same pages.
function collectGarbage() {
    if (typeof global.gc === 'function') global.gc();
}

/// Before a round, untimed: collectGarbage, then one run of `last` ({session, feeds}, the model the
/// round times last), which pays for the collection (the run after one is slower: timed, it would
/// fall on whichever model a round starts with), so that every timed run follows another model's (a
/// model run twice in a row runs faster the second time).
async function collectAndSettle(last) {
    collectGarbage();
    if (last) await last.session.run(last.feeds);
}

/// timeRunsInOrder's times, each run's sorted.
async function timeRuns(runs, repeat) {
    return (await timeRunsInOrder(runs, repeat)).map((t) => t.sort((a, b) => a - b));
}

const median = (sorted) => sorted[Math.floor(sorted.length / 2)];

/// max |a - b| / max |b| over one output's values (b the reference); NaN anywhere is Infinity.
function relativeDifference(a, b) {
    let diff = 0;
    let scale = 0;
    for (let i = 0; i < b.length; ++i) {
        const d = Math.abs(a[i] - b[i]);
        diff = Number.isNaN(d) ? Infinity : Math.max(diff, d);
        scale = Math.max(scale, Math.abs(b[i]));
    }
    return { rel: diff / (scale > 0 ? scale : 1), scale };
}

async function main() {
    const args = parseArgs(process.argv.slice(2));
    const ort = loadOrt();
    const given = args.inputs ? JSON.parse(fs.readFileSync(args.inputs, 'utf8')) : {};
    const r = await runModel(ort, args.model, (s) => makeFeeds(ort, s, given, args.raw, args.seed), args.level);
    if (args.saveInputs) fs.writeFileSync(args.saveInputs, JSON.stringify(r.inputs));
    const result = { model: path.basename(args.model), outputs: r.outputs };
    if (args.repeat > 0) {
        const [t] = await timeRuns([r], args.repeat);
        result.milliseconds = { median: median(t), min: t[0], max: t[t.length - 1], runs: t.length };
    }
    const text = JSON.stringify(result);
    if (args.out) fs.writeFileSync(args.out, text);
    else process.stdout.write(text + '\n');
}

module.exports = { loadOrt, makeFeeds, runModel, keepFreedMemory, collectAndSettle, timingOptions, timeRuns, timeRunsInOrder, median, relativeDifference, fail };

if (require.main === module) main().catch((e) => fail(e.message));
