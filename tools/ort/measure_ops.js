#!/usr/bin/env node
// Times small ONNX models in onnxruntime (CPU): the measuring child process of `goopt calibrate`,
// which writes one model per op configuration (or fused group) and reads the medians back.
// Install onnxruntime once with ./bootstrap.sh ort.
//
//   node measure_ops.js MANIFEST.json [--out RESULT.json]
//   node measure_ops.js --environment [--threads N] [--out FILE.json]   (where it measures, as RESULT.json says)
//
// MANIFEST.json: {"threads": N, "repetitions": R, "warmup": W, ["group": G,] "models": [{"id": "...", "file": "m.onnx"}, ...]}
// Each model gets its own session (graph optimization level "all", N intra-op threads, one inter-op
// thread, sequential execution, no spinning), inputs drawn once (floats uniform in [-1, 1], integers 0 or 1,
// seeded) and W runs untimed; then R rounds each time one session.run of every model (interleaved),
// G models at a time (default 64). It runs with glibc keeping freed memory (run_model.js's
// keepFreedMemory) and collects garbage before each round (collectAndSettle).
// RESULT.json (default: stdout):
// {"runtime": "onnxruntime", "version": "...", "threads": N, "cpu": "...", "cores": C,
//  "results": [{"id", "median_seconds", "min_seconds", "max_seconds"} | {"id", "error"}, ...]}
// A model the runtime refuses is a result with "error" (the others are still measured).
'use strict';

const fs = require('fs');
const os = require('os');
const path = require('path');
const { keepFreedMemory, collectAndSettle, timingOptions } = require('./run_model.js');

function fail(message) {
    process.stderr.write(`measure_ops.js: error: ${message}\n`);
    process.exit(1);
}

function loadOrt() {
    try {
        return {
            ort: require('onnxruntime-node'),
            version: require('onnxruntime-node/package.json').version,
        };
    } catch (e) {
        fail(`onnxruntime-node is not installed next to ${__filename} (run ./bootstrap.sh ort): ${e.message.split('\n')[0]}`);
    }
}

/// A seeded generator of uniform numbers in [0, 1) (mulberry32).
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

function feedOf(ort, meta, next) {
    const shape = meta.shape || [];
    for (const d of shape)
        if (typeof d !== 'number' || d < 0) throw new Error(`input '${meta.name}' has a symbolic dimension`);
    const count = shape.reduce((a, b) => a * b, 1);
    switch (meta.type) {
        case 'float32':
        case 'float64': {
            const data = meta.type === 'float32' ? new Float32Array(count) : new Float64Array(count);
            for (let i = 0; i < count; ++i) data[i] = 2 * next() - 1;
            return new ort.Tensor(meta.type, data, shape);
        }
        case 'int64': {
            const data = new BigInt64Array(count);
            for (let i = 0; i < count; ++i) data[i] = next() < 0.5 ? 0n : 1n;
            return new ort.Tensor(meta.type, data, shape);
        }
        case 'int32':
        case 'int8':
        case 'uint8':
        case 'bool': {
            const Array = { int32: Int32Array, int8: Int8Array, uint8: Uint8Array, bool: Uint8Array }[meta.type];
            const data = new Array(count);
            for (let i = 0; i < count; ++i) data[i] = next() < 0.5 ? 0 : 1;
            return new ort.Tensor(meta.type, data, shape);
        }
        default:
            throw new Error(`input '${meta.name}' has element type ${meta.type}, which this script does not draw`);
    }
}

function median(sorted) {
    const n = sorted.length;
    return n % 2 ? sorted[(n - 1) / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
}

function summary(times) {
    times.sort((a, b) => a - b);
    return { median_seconds: median(times), min_seconds: times[0], max_seconds: times[times.length - 1] };
}

/// Measures `models` in groups of at most `group` open sessions (a session holds its own intra-op
/// pool and arena: a search's candidates are hundreds of models).
async function measureAll(ort, models, manifest, options) {
    const results = [];
    for (let first = 0; first < models.length; first += manifest.group)
        results.push(...(await measureGroup(ort, models.slice(first, first + manifest.group), manifest, options)));
    return results;
}

/// Opens every model (a model the runtime refuses gets its error), runs each `warmup` times, then
/// times `repetitions` rounds, each running every model once: interleaved, so that a spell in which
/// the machine is busy slows one run of every model, not every run of one.
async function measureGroup(ort, models, manifest, options) {
    const open = [];
    for (const model of models) {
        try {
            const session = await ort.InferenceSession.create(model.file, options);
            const next = uniform(1);
            const feeds = {};
            for (const meta of session.inputMetadata) feeds[meta.name] = feedOf(ort, meta, next);
            for (let i = 0; i < manifest.warmup; ++i) await session.run(feeds);
            open.push({ id: model.id, session, feeds, times: [] });
        } catch (e) {
            open.push({ id: model.id, error: String(e.message || e).split('\n')[0] });
        }
    }
    for (let round = 0; round < manifest.repetitions; ++round) {
        await collectAndSettle(open.filter((m) => !m.error).pop());  // untimed
        for (const m of open) {
            if (m.error) continue;
            try {
                const t0 = process.hrtime.bigint();
                await m.session.run(m.feeds);
                m.times.push(Number(process.hrtime.bigint() - t0) / 1e9);
            } catch (e) {
                m.error = String(e.message || e).split('\n')[0];
            }
        }
    }
    const results = [];
    for (const m of open) {
        if (m.session) await m.session.release();
        results.push(m.error ? { id: m.id, error: m.error } : { id: m.id, ...summary(m.times) });
    }
    return results;
}

async function main() {
    keepFreedMemory();
    const argv = process.argv.slice(2);
    let manifestFile = null;
    let out = null;
    let environment = false;
    let threads = 1;
    for (let i = 0; i < argv.length; ++i) {
        if (argv[i] === '--out') {
            if (i + 1 >= argv.length) fail('--out needs a file');
            out = argv[++i];
        } else if (argv[i] === '--threads') {
            threads = Number(argv[++i]);
            if (!Number.isInteger(threads) || threads < 1) fail(`--threads ${argv[i]}: expected a count`);
        } else if (argv[i] === '--environment') environment = true;
        else if (manifestFile === null) manifestFile = argv[i];
        else fail(`unexpected argument '${argv[i]}'`);
    }
    const write = (report) => {
        const text = JSON.stringify(report) + '\n';
        if (out === null) process.stdout.write(text);
        else fs.writeFileSync(out, text);
    };
    if (environment) {
        write(environmentOf(loadOrt().version, threads));
        return;
    }
    if (manifestFile === null) fail('usage: node measure_ops.js MANIFEST.json [--out RESULT.json]');
    let manifest;
    try {
        manifest = JSON.parse(fs.readFileSync(manifestFile, 'utf8'));
    } catch (e) {
        fail(`${manifestFile}: ${e.message}`);
    }
    if (manifest.group === undefined) manifest.group = 64;
    for (const key of ['threads', 'repetitions', 'warmup', 'group'])
        if (!Number.isInteger(manifest[key]) || manifest[key] < (key === 'warmup' ? 0 : 1))
            fail(`${manifestFile}: "${key}" is ${JSON.stringify(manifest[key])}: expected a count`);
    if (!Array.isArray(manifest.models)) fail(`${manifestFile}: "models" is not an array`);
    const { ort, version } = loadOrt();
    // the pools' spinning off, as time_models.js times (run_model.js's timingOptions says why)
    const options = { graphOptimizationLevel: 'all', ...timingOptions(manifest.threads) };
    const models = manifest.models.map((m) => ({ ...m, file: path.resolve(path.dirname(manifestFile), m.file) }));
    const results = await measureAll(ort, models, manifest, options);
    write({ ...environmentOf(version, manifest.threads), results });
}

/// Where this script measures: the runtime, its version and threads, the CPU model and core count.
function environmentOf(version, threads) {
    const cpus = os.cpus();
    return {
        runtime: 'onnxruntime',
        version,
        threads,
        cpu: cpus.length ? cpus[0].model.trim() : 'unknown',
        cores: cpus.length,
    };
}

main().catch((e) => fail(String(e.message || e)));
