// Shared by the Node drivers of bench/bench.py: arguments in, one JSON line out, stop on stdin.
// Each driver is run as `node DRIVER.js COMMAND 'JSON'` with NODE_PATH pointing at the peers'
// node_modules (target/bench-peers/node), and prints its result as one JSON line on stdout.

function args() {
  return { command: process.argv[2], options: JSON.parse(process.argv[3] || '{}') };
}

function reply(result) {
  process.stdout.write(JSON.stringify(result) + '\n');
}

// Resolves when bench.py closes our stdin: that is how it says "stop now".
function stdinClosed() {
  return new Promise((resolve) => {
    process.stdin.on('data', () => {});
    process.stdin.on('end', resolve);
    process.stdin.on('close', resolve);
    process.stdin.resume();
  });
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// Random gaps between the adds of a pickup measurement, as bench.py's own (5 to 25 ms), so that
// adds do not fall in step with anything periodic.
const gap = () => sleep(5 + Math.random() * 20);

async function main(commands) {
  const { command, options } = args();
  if (!commands[command]) {
    throw new Error(`unknown command ${command}; one of ${Object.keys(commands).join(', ')}`);
  }
  reply(await commands[command](options));
}

function run(commands) {
  main(commands).then(
    () => process.exit(0),
    (error) => {
      console.error(error && error.stack ? error.stack : error);
      process.exit(1);
    },
  );
}

module.exports = { reply, stdinClosed, sleep, gap, run };
