// play page: filled in below.
import "./ui.js";
