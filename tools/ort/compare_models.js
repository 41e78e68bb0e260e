#!/usr/bin/env node
// Runs two ONNX models in onnxruntime (CPU, optimization level "all") on the same random inputs and
// compares them output by output: max |a - b| / max |b|, b the first (reference) model's output,
// must be at most --tolerance (default 1e-4) for every output, whose names and shapes must agree.
//
//   node compare_models.js REFERENCE.onnx OTHER.onnx [--seed N] [--tolerance T] [--level L] [--repeat N]
//
// The inputs are drawn from the reference model's input metadata: floats uniform in [-1, 1],
// integers 0 or 1 (see run_model.js). Exit status 0 when every output agrees, 1 otherwise.
// --repeat N then times N runs of each, interleaved, and prints medians, spreads and their ratio.
'use strict';

const { loadOrt, makeFeeds, runModel, timeRuns, median, relativeDifference, fail } = require('./run_model.js');

function parseArgs(argv) {
    const a = { models: [], seed: 1, tolerance: 1e-4, level: 'all', repeat: 0 };
    for (let i = 0; i < argv.length; ++i) {
        const flag = argv[i];
        const value = () => {
            if (i + 1 >= argv.length) fail(`${flag} needs a value`);
            return argv[++i];
        };
        if (flag === '--seed') a.seed = Number(value());
        else if (flag === '--tolerance') a.tolerance = Number(value());
        else if (flag === '--level') a.level = value();
        else if (flag === '--repeat') a.repeat = Number(value());
        else if (flag.startsWith('--')) fail(`unknown flag ${flag}`);
        else a.models.push(flag);
    }
    if (a.models.length !== 2) fail('expected two models: node compare_models.js REFERENCE.onnx OTHER.onnx');
    if (!Number.isInteger(a.seed)) fail('--seed needs an integer');
    if (!(a.tolerance >= 0)) fail('--tolerance needs a number >= 0');
    if (!Number.isInteger(a.repeat) || a.repeat < 0) fail('--repeat needs a count >= 0');
    return a;
}

async function main() {
    const args = parseArgs(process.argv.slice(2));
    const ort = loadOrt();
    const [refModel, otherModel] = args.models;
    const ref = await runModel(ort, refModel, (s) => makeFeeds(ort, s, {}, [], args.seed), args.level);
    const other = await runModel(ort, otherModel, (s) => makeFeeds(ort, s, ref.inputs, [], null), args.level);
    if (ref.outputs.length !== other.outputs.length)
        fail(`${refModel} has ${ref.outputs.length} outputs, ${otherModel} ${other.outputs.length}`);
    let ok = true;
    ref.outputs.forEach((b, k) => {
        const a = other.outputs[k];
        if (a.name !== b.name || a.shape.join(',') !== b.shape.join(',')) {
            console.log(`output ${k}: '${b.name}' [${b.shape}] vs '${a.name}' [${a.shape}]: names or shapes differ`);
            ok = false;
            return;
        }
        const { rel, scale } = relativeDifference(a.data, b.data);
        const pass = rel <= args.tolerance;
        ok = ok && pass;
        console.log(`output '${b.name}' [${b.shape}]: max |a - b| / max |b| = ${rel.toExponential(3)}` +
                    ` (max |b| ${scale.toPrecision(4)})${pass ? '' : ` > ${args.tolerance}: DIFFERENT`}`);
    });
    console.log(ok ? `agree within ${args.tolerance}` : `differ by more than ${args.tolerance}`);
    if (args.repeat > 0) {
        const [a, b] = await timeRuns([ref, other], args.repeat);
        const line = (name, t) =>
            `${name}: median ${median(t).toFixed(3)} ms (min ${t[0].toFixed(3)}, max ${t[t.length - 1].toFixed(3)})`;
        console.log(`${args.repeat} runs each, interleaved, level ${args.level}`);
        console.log(line(refModel, a));
        console.log(line(otherModel, b));
        console.log(`median ratio (reference / other): ${(median(a) / median(b)).toFixed(3)}`);
    }
    process.exit(ok ? 0 : 1);
}

main().catch((e) => fail(e.message));
