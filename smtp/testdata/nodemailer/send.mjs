// send.mjs HOST PORT: sends one message with nodemailer over implicit TLS
// (secure: true) and prints the server's answer.
import nodemailer from "nodemailer";

const [host, port] = process.argv.slice(2);
const transport = nodemailer.createTransport({
  host, port: Number(port), secure: true,
  tls: { rejectUnauthorized: false }, // the server's certificate is self-signed
});
const info = await transport.sendMail({
  from: "node@example.com", to: "inbox@localhost", subject: "over implicit TLS",
  text: "sent by nodemailer", messageId: "<node-smtps@example.com>",
});
console.log(info.response);
