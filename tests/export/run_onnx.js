// Runs a model.onnx in ONNX Runtime (the npm package onnxruntime-node, found through NODE_PATH) on
// prepared inputs, for check_onnx.py: no detkit code is involved.
//
// node run_onnx.js MODEL IN_DIR OUT_DIR
//   IN_DIR/<stem>.json: {"shape": [3, H, W], "original_size": [h, w]}; IN_DIR/<stem>.u8 the image's
//   bytes (uint8, C x H x W). Writes OUT_DIR/<stem>.<output>.bin (the output's raw bytes) and
//   OUT_DIR/<stem>.json ({output: {"type", "dims"}}, with the run's milliseconds).
'use strict';
const fs = require('fs');
const path = require('path');
const ort = require('onnxruntime-node');

async function main() {
  const [model, inDir, outDir] = process.argv.slice(2);
  const session = await ort.InferenceSession.create(model, {intraOpNumThreads: 0});
  fs.mkdirSync(outDir, {recursive: true});
  const stems = fs.readdirSync(inDir).filter((f) => f.endsWith('.json')).map((f) => f.slice(0, -5));
  for (const stem of stems.sort()) {
    const meta = JSON.parse(fs.readFileSync(path.join(inDir, stem + '.json')));
    const bytes = fs.readFileSync(path.join(inDir, stem + '.u8'));
    const feeds = {
      image: new ort.Tensor('uint8', new Uint8Array(bytes), meta.shape),
      original_size: new ort.Tensor('int64', BigInt64Array.from(meta.original_size.map(BigInt)), [2]),
    };
    const start = process.hrtime.bigint();
    const results = await session.run(feeds);
    const ms = Number(process.hrtime.bigint() - start) / 1e6;
    const listing = {milliseconds: ms};
    for (const [name, tensor] of Object.entries(results)) {
      const data = tensor.data;
      const raw = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
      fs.writeFileSync(path.join(outDir, `${stem}.${name}.bin`), raw);
      listing[name] = {type: tensor.type, dims: tensor.dims};
    }
    fs.writeFileSync(path.join(outDir, stem + '.json'), JSON.stringify(listing));
    console.log(`${stem}: ${results.scores.dims[0]} detections in ${ms.toFixed(0)} ms`);
  }
}

main().catch((e) => {
  console.error(e && e.stack ? e.stack : String(e));
  process.exit(1);
});
