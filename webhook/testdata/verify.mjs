// Verifies inboxd webhook requests with the standardwebhooks npm package,
// an implementation nobody here wrote. Reads from stdin a JSON list of
// {secret, headers, body_base64}; prints "verified N" and exits 0 when
// every request verifies, exits 1 naming the first that does not.
//
// Install: npm install --prefix webhook/testdata standardwebhooks
// Run by webhook_test.go (TestNodeLibraryVerifies and the delivery test).
import pkg from "standardwebhooks";

const { Webhook } = pkg;

let input = "";
for await (const chunk of process.stdin) input += chunk;
const cases = JSON.parse(input);
for (const [i, c] of cases.entries()) {
  try {
    new Webhook(c.secret).verify(Buffer.from(c.body_base64, "base64"), c.headers);
  } catch (e) {
    console.error(`case ${i}: ${e.message}`);
    process.exit(1);
  }
}
console.log(`verified ${cases.length}`);
